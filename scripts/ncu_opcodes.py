"""Which instructions one kernel executes more than another: ncu's executed count per SASS opcode, side by side.

    python3 scripts/ncu_opcodes.py ours.txt fa3.txt [--min 100000] [--per OPCODE]

Each file is an `ncu --metrics sass__inst_executed_per_opcode,...` text report (`gpu_run.sh ncucmp` writes them as
ncucmp_<scenario>_<impl>.txt). Prints every opcode whose counts differ by --min or more, largest excess first, and
the totals. `--per HGMMA` (or MUFU) also divides each count by that opcode's count in the same file: with the same
tensor work on both sides, the columns read as instructions per unit of that work.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

METRIC = "sass__inst_executed_per_opcode"


def opcode_counts(text: str) -> dict[str, int]:
    """The (OPCODE: count; ...) list that follows the per-opcode metric, or ValueError when the report has none."""
    start = text.find(METRIC)
    if start < 0:
        raise ValueError(f"no {METRIC} in the report; profile with --metrics {METRIC}")
    end = text.find(")", start)
    blob = re.sub(r"\s+", " ", text[start:end if end > 0 else len(text)])
    counts = {m.group(1): int(m.group(2).replace(",", "")) for m in re.finditer(r"([A-Z][A-Z0-9_]*): ([\d,]+)", blob)}
    if not counts:
        raise ValueError(f"{METRIC} lists no opcode counts")
    return counts


def table(a: dict[str, int], b: dict[str, int], min_diff: int, per: str | None) -> list[str]:
    """Rows: opcode, both counts, their difference (and both per `per` when asked), largest excess of a first."""
    keys = sorted(set(a) | set(b), key=lambda k: (-(a.get(k, 0) - b.get(k, 0)), k))
    head = f"{'opcode':14s}{'first':>14s}{'second':>14s}{'difference':>14s}"
    if per:
        head += f"{'first/' + per:>14s}{'second/' + per:>14s}"
    rows = [head]
    for k in keys:
        x, y = a.get(k, 0), b.get(k, 0)
        if abs(x - y) < min_diff:
            continue
        line = f"{k:14s}{x:14,d}{y:14,d}{x - y:14,d}"
        if per:
            line += f"{x / a[per]:14.3f}{y / b[per]:14.3f}"
        rows.append(line)
    rows.append(f"{'total':14s}{sum(a.values()):14,d}{sum(b.values()):14,d}{sum(a.values()) - sum(b.values()):14,d}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--min", type=int, default=100_000, help="show opcodes whose counts differ by this or more")
    ap.add_argument("--per", help="also divide by this opcode's count in the same file (HGMMA, MUFU)")
    args = ap.parse_args(argv)
    try:
        a, b = (opcode_counts(p.read_text(errors="replace")) for p in (args.first, args.second))
    except (OSError, ValueError) as e:
        print(f"ncu_opcodes: {e}", file=sys.stderr)
        return 2
    if args.per and not (a.get(args.per) and b.get(args.per)):
        print(f"ncu_opcodes: --per {args.per}: the opcode is not counted in both reports; pick one both execute "
              f"(HGMMA, MUFU)", file=sys.stderr)
        return 2
    print("\n".join(table(a, b, args.min, args.per)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
