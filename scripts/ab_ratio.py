"""A/B ratios from one interleaved ladder_bench run: every kernel against the first, per (head_dim, causal) group.

    python3 scripts/ab_ratio.py OUT/ladder_bench.json            # the first kernel label is the baseline
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --worst 5  # also each variant's five largest losses
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --moved 1  # also every shape a variant moved by > 1 %
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --copies "04_pingpong[PAIR_TAIL=3]" --shapes A_x,B_y
        # also each variant against the faster of the baseline and its copies, shape by shape, on these shapes
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --copies C --verdict 0.5,3 --winners winners.txt
        # the knob rule: a one-knob variant is adopted when its geomean against the faster reference gains >= 0.5 %,
        # no shape is below -3 % and none failed; the adopted NAME=VALUE lines go to winners.txt (none: empty)

A ratio is baseline time / variant time (above 1: the variant is faster), geomean over the shapes both timed
and passed; a shape either failed is listed, never averaged. With --copies (builds identical to the baseline) a
variant is also read against the faster reference of each shape: a copy that ran one shape slow no longer makes a
variant's gain (run 77: GQA_PAIR_BLOCKS x1.014 over a copy, x1.002 against the faster reference).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict


def _labels(rows: list[dict]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        for label in r.get("impl", {}):
            if label not in seen and label not in ("fa3", "fa2", "cudnn", "fa4"):
                seen.append(label)
    return seen


def _ok(cell: dict | None) -> bool:
    return bool(cell) and cell.get("status", "ok") in ("ok", "pass", "passed") and (cell.get("ms") or 0) > 0


def ratios(rows: list[dict], base: str, other: str) -> tuple[dict[str, list[float]], list[str], list[tuple]]:
    """Per group ('d64 c1', ... and 'all') the log ratios; the shapes that failed; (ratio, name) per shape."""
    groups: dict[str, list[float]] = defaultdict(list)
    failed, per_shape = [], []
    for r in rows:
        a, b = r["impl"].get(base), r["impl"].get(other)
        if not (_ok(a) and _ok(b)):
            failed.append(r["name"])
            continue
        x = math.log(a["ms"] / b["ms"])
        groups[f"d{r['head_dim']} c{int(bool(r['causal']))}"].append(x)
        groups["all"].append(x)
        per_shape.append((math.exp(x), r["name"]))
    return groups, failed, per_shape


def best_reference_ratios(rows: list[dict], refs: list[str], other: str) -> list[float]:
    """Log ratios, fastest of `refs` / `other`, per shape that `other` and at least one reference passed."""
    logs = []
    for r in rows:
        ref_ms = [r["impl"][ref]["ms"] for ref in refs if _ok(r["impl"].get(ref))]
        if ref_ms and _ok(r["impl"].get(other)):
            logs.append(math.log(min(ref_ms) / r["impl"][other]["ms"]))
    return logs


def report(doc: dict, worst: int = 0, moved_pct: float = 0.0, copies: tuple = (), shapes: tuple = ()) -> str:
    rows = [r for r in doc["results"] if not shapes or r["name"] in shapes]
    labels = _labels(rows)
    if len(labels) < 2:
        return "ab_ratio: fewer than two kernels in this run: nothing to compare"
    base, lines = labels[0], []
    for other in labels[1:]:
        groups, failed, per_shape = ratios(rows, base, other)
        cells = [f"{g} {math.exp(sum(xs) / len(xs)):.4f} ({len(xs)})" for g, xs in sorted(groups.items())]
        lines.append(f"{other} x {base}: " + ", ".join(cells))
        if failed:
            lines.append(f"  not compared (a failure or no time): {', '.join(failed)}")
        for ratio, name in sorted(per_shape)[:worst]:
            lines.append(f"  {ratio:.3f} {name}")
        if moved_pct > 0:
            moved = [f"{name} {ratio:.3f}" for ratio, name in per_shape if abs(ratio - 1) * 100 > moved_pct]
            lines.append(f"  moved by > {moved_pct:g} %: " + (", ".join(moved) if moved else "none"))
        if copies and other not in copies:
            logs = best_reference_ratios(rows, [base, *copies], other)
            value = f"{math.exp(sum(logs) / len(logs)):.4f}" if logs else "n/a"
            lines.append(f"  against the faster of {base} and {', '.join(copies)} per shape: {value} ({len(logs)})")
    return "\n".join(lines)


def knob_of(label: str) -> tuple[str, str] | None:
    """(NAME, VALUE) of a one-knob variant label `kernel[NAME=VALUE]`; None for any other label."""
    if not label.endswith("]") or "[" not in label:
        return None
    inner = label[label.index("[") + 1:-1]
    if "," in inner or inner.count("=") != 1:
        return None
    name, value = inner.split("=")
    return name, value


def verdicts(rows: list[dict], copies: tuple, gain_pct: float, floor_pct: float) -> tuple[list[str], list[str]]:
    """The knob rule over every one-knob variant: (report lines, adopted NAME=VALUE). A multi-knob variant is judged
    too; when two or more knobs pass, a measured variant holding exactly them must pass as well, else only the best
    single knob is adopted (two gains need not add up)."""
    labels = _labels(rows)
    base, lines, passed = labels[0], [], {}
    for other in labels[1:]:
        if other in copies:
            continue
        logs = best_reference_ratios(rows, [base, *copies], other)
        failed = [r["name"] for r in rows if not _ok(r["impl"].get(other))]
        if not logs:
            lines.append(f"verdict {other}: no shape timed: reject")
            continue
        geo, worst = math.exp(sum(logs) / len(logs)), math.exp(min(logs))
        ok = not failed and geo >= 1 + gain_pct / 100 and worst >= 1 - floor_pct / 100
        lines.append(f"verdict {other}: x{geo:.4f} against the faster reference, worst shape x{worst:.3f}"
                     f"{', failed ' + ', '.join(failed) if failed else ''}: {'adopt' if ok else 'reject'}")
        if ok:
            passed[other] = geo
    singles = {label: knob_of(label) for label in passed if knob_of(label)}
    if len(singles) >= 2:
        wanted = {f"{n}={v}" for n, v in singles.values()}
        joint = [lb for lb in labels if "[" in lb and set(lb[lb.index("[") + 1:-1].split(",")) == wanted]
        if not (joint and joint[0] in passed):
            best = max(singles, key=passed.get)
            lines.append(f"verdict: {len(singles)} knobs pass alone but no passing variant holds them together: "
                         f"only {best}")
            singles = {best: singles[best]}
    return lines, [f"{n}={v}" for n, v in singles.values()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="ladder_bench.json of one run")
    ap.add_argument("--worst", type=int, default=0, help="list each variant's N largest losses")
    ap.add_argument("--moved", type=float, default=0.0, metavar="PCT",
                    help="list every shape (suite order) whose ratio is more than PCT %% from 1, either way")
    ap.add_argument("--copies", default="", metavar="LABELS",
                    help="comma list of kernel labels that are copies of the baseline (the first kernel)")
    ap.add_argument("--shapes", default="", metavar="NAMES", help="comma list: compare on these scenarios only")
    ap.add_argument("--verdict", default="", metavar="GAIN,FLOOR",
                    help="the knob rule in %%: adopt a one-knob variant at >= GAIN geomean against the faster "
                         "reference with no shape below -FLOOR and none failed")
    ap.add_argument("--winners", default="", metavar="FILE", help="with --verdict: write adopted NAME=VALUE lines")
    args = ap.parse_args(argv)
    try:
        rule = tuple(float(x) for x in args.verdict.split(",")) if args.verdict else ()
        assert not rule or len(rule) == 2
    except (ValueError, AssertionError):
        print(f"ab_ratio: --verdict {args.verdict!r} is not GAIN,FLOOR in percent (e.g. 0.5,3)", file=sys.stderr)
        return 2
    if args.winners and not rule:
        print("ab_ratio: --winners needs --verdict GAIN,FLOOR (the rule that picks them)", file=sys.stderr)
        return 2
    try:
        with open(args.json, encoding="utf-8") as fh:
            doc = json.load(fh)
        rows = doc["results"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"ab_ratio: cannot read {args.json}: {exc}; pass the ladder_bench.json a run wrote", file=sys.stderr)
        return 2
    labels = _labels(rows)
    copies = tuple(c.strip() for c in args.copies.split(",") if c.strip())
    unknown = [c for c in copies if c not in labels]
    if unknown or (copies and labels and labels[0] in copies):
        print(f"ab_ratio: --copies {', '.join(unknown) or labels[0]} is not a copy label of this run (its kernels: "
              f"{', '.join(labels)}); name the baseline's copies among them", file=sys.stderr)
        return 2
    shapes = tuple(n.strip() for n in args.shapes.split(",") if n.strip())
    missing = sorted(set(shapes) - {r["name"] for r in rows})
    if missing:
        print(f"ab_ratio: --shapes {', '.join(missing)} not in this run; name scenarios it timed", file=sys.stderr)
        return 2
    print(report({"results": rows}, args.worst, args.moved, copies, shapes))
    if rule:
        lines, adopted = verdicts([r for r in rows if not shapes or r["name"] in shapes], copies, *rule)
        print("\n".join(lines))
        if args.winners:
            with open(args.winners, "w", encoding="utf-8") as fh:
                fh.write("".join(f"{w}\n" for w in adopted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
