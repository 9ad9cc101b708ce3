"""Where a kernel's warps wait, per SASS instruction: a summary of ncu's source page (SourceCounters sampling).

    ncu ... --section SourceCounters -o rep python3 -m workbench.agent.launch_one ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass > rep.sass.csv
    python3 scripts/ncu_stalls.py rep.sass.csv [--top 30]

Prints the columns found, the share of stall samples per opcode (SYNCS waits split by the barrier offset they
poll, so a K/V "full" wait and a pingpong named barrier are told apart), and the top instructions. The column
names are matched loosely ("Samples", "Source", "Address") because ncu versions name them slightly differently.
"""
from __future__ import annotations

import argparse
import collections
import csv
import re
import sys


def _col(header: list[str], *needles: str) -> int | None:
    for i, h in enumerate(header):
        if all(n.lower() in h.lower() for n in needles):
            return i
    return None


def _num(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode_class(sass: str) -> str:
    """The opcode of an instruction, with waits labelled by what they wait on."""
    body = re.sub(r"^@!?U?P\w+\s+", "", sass.strip())
    op = body.split(" ")[0] if body else "?"
    if op.startswith("SYNCS.PHASECHK"):
        m = re.search(r"\[([^\]]*)\]", body)
        return f"{op}[{re.sub(r'R[0-9]+|UR[0-9]+', 'R', m.group(1)) if m else '?'}]"
    return op


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    with open(args.csv, newline="", errors="replace") as f:
        rows = [r for r in csv.reader(f) if r]
    start = next((i for i, r in enumerate(rows) if _col(r, "source") is not None), None)
    if start is None:
        print(f"ncu_stalls: no header with a 'Source' column in {args.csv}", file=sys.stderr)
        return 2
    header, body = rows[start], rows[start + 1:]
    src, alls = _col(header, "source"), _col(header, "samples")
    notissued = _col(header, "not-issued") or _col(header, "not issued")
    executed = _col(header, "instructions executed")
    print("columns:", " | ".join(header)[:900])
    if alls is None:
        print("ncu_stalls: no sampling column", file=sys.stderr)
        return 2
    total = sum(_num(r[alls]) for r in body if len(r) > alls) or 1.0
    by_op: collections.Counter[str] = collections.Counter()
    for r in body:
        if len(r) > max(src, alls):
            by_op[opcode_class(r[src])] += _num(r[alls])
    print(f"stall samples: {total:.0f}; by opcode (share of all samples):")
    for op, n in by_op.most_common(25):
        print(f"  {100 * n / total:5.1f} %  {op}")
    print(f"top {args.top} instructions:")
    ranked = sorted((r for r in body if len(r) > max(src, alls)), key=lambda r: -_num(r[alls]))
    for r in ranked[:args.top]:
        extra = f" not-issued {_num(r[notissued]):.0f}" if notissued is not None and len(r) > notissued else ""
        ex = f" exec {_num(r[executed]):.0f}" if executed is not None and len(r) > executed else ""
        print(f"  {100 * _num(r[alls]) / total:5.2f} %{extra}{ex}  {r[src].strip()[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
