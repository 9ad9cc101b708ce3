"""A/B ratios from one interleaved ladder_bench run: every kernel against the first, per (head_dim, causal) group.

    python3 scripts/ab_ratio.py OUT/ladder_bench.json            # the first kernel label is the baseline
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --worst 5  # also each variant's five largest losses
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --moved 1  # also every shape a variant moved by > 1 %
    python3 scripts/ab_ratio.py OUT/ladder_bench.json --copies "04_pingpong[PAIR_TAIL=3]" --shapes A_x,B_y
        # also each variant against the faster of the baseline and its copies, shape by shape, on these shapes

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="ladder_bench.json of one run")
    ap.add_argument("--worst", type=int, default=0, help="list each variant's N largest losses")
    ap.add_argument("--moved", type=float, default=0.0, metavar="PCT",
                    help="list every shape (suite order) whose ratio is more than PCT %% from 1, either way")
    ap.add_argument("--copies", default="", metavar="LABELS",
                    help="comma list of kernel labels that are copies of the baseline (the first kernel)")
    ap.add_argument("--shapes", default="", metavar="NAMES", help="comma list: compare on these scenarios only")
    args = ap.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
