"""How much of a kernel's x FA3 in one evaluation is the SM clock each was sampled at: per row the time ratio and
the ratio at equal clock (time ratio x FA3's clock / ours), geomeans by row length and by category.

    python3 scripts/clock_gap.py docs/data/h100_ladder_04_pingpong_full_dt4_v29_2026-12-07.json [--long-us 2000]
        [--worst 15]

Why: on long rows both kernels run at the power cap, and each implementation's samples follow different work (the
candidate's right after its verification, the anchors after the baseline), so a row's x FA3 can be a clock gap
rather than a cycle gap. The equal-clock ratio assumes time scales as 1/clock (compute-bound rows); it is a reading
aid, never a figure to report instead of device time. Rows without both clocks are left out of that column.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workbench.harness.scenarios import geomean  # noqa: E402


def gap_rows(doc: dict, anchor: str = "fa3") -> list[dict]:
    """One dict per timed row with the anchor: name, category, our median, x anchor, both clocks, x at equal clock."""
    out = []
    for r in doc.get("rows", []):
        ours, ref = r.get("stats") or {}, (r.get("reference_stats") or {}).get(anchor) or {}
        if not ours.get("median_us") or not ref.get("median_us"):
            continue
        ratio = ref["median_us"] / ours["median_us"]
        c_ours, c_ref = ours.get("clock_mhz"), ref.get("clock_mhz")
        equal = ratio * c_ref / c_ours if c_ours and c_ref else None
        out.append(dict(name=r["scenario"]["name"], category=r["scenario"].get("category", "?"),
                        us=ours["median_us"], ratio=ratio, clock=c_ours, ref_clock=c_ref, equal_clock=equal))
    return out


def summary(rows: list[dict], long_us: float) -> list[str]:
    """Geomean lines: all rows, rows under and over `long_us`, each category."""
    groups = defaultdict(list)
    for r in rows:
        groups["all"].append(r)
        groups[f">= {long_us:g} us" if r["us"] >= long_us else f"< {long_us:g} us"].append(r)
        groups[f"category {r['category']}"].append(r)
    lines = [f"{'rows':18s} {'n':>4s} {'x anchor':>9s} {'at equal clock':>15s}"]
    for name in sorted(groups, key=lambda g: (g != "all", not g.startswith(("<", ">")), g)):
        rs = groups[name]
        eq = [r["equal_clock"] for r in rs if r["equal_clock"]]
        lines.append(f"{name:18s} {len(rs):4d} {geomean([r['ratio'] for r in rs]):9.3f} {geomean(eq):15.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="an evaluation's JSON (workbench check --json)")
    ap.add_argument("--anchor", default="fa3")
    ap.add_argument("--long-us", type=float, default=2000.0, help="rows at least this long count as long")
    ap.add_argument("--worst", type=int, default=15, help="list the N rows of lowest x anchor")
    args = ap.parse_args(argv)
    try:
        with open(args.json, encoding="utf-8") as fh:
            doc = json.load(fh)
        rows = gap_rows(doc, args.anchor)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"clock_gap: {args.json} is not an evaluation JSON ({exc}); pass what `workbench check --json` wrote",
              file=sys.stderr)
        return 2
    if not rows:
        print(f"clock_gap: {args.json} has no row timed with {args.anchor!r}; name an anchor the run timed",
              file=sys.stderr)
        return 2
    print("\n".join(summary(rows, args.long_us)))
    print(f"\n{'lowest x ' + args.anchor:34s} {'us':>9s} {'x':>6s} {'MHz':>7s} {'anchor':>7s} {'eq clk':>7s}")
    for r in sorted(rows, key=lambda r: r["ratio"])[: args.worst]:
        eq = f"{r['equal_clock']:7.3f}" if r["equal_clock"] else "      -"
        clocks = f"{r['clock'] or 0:7.0f} {r['ref_clock'] or 0:7.0f}"
        print(f"{r['name']:34s} {r['us']:9.1f} {r['ratio']:6.3f} {clocks} {eq}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
