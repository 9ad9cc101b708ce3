"""Where a kernel's executed instructions go, by region: each HGMMA loop (per iteration) and the code around them.

    python3 scripts/ncu_regions.py ours.sass.csv [fa3.sass.csv ...] [--top 12]

Each file is ncu's source page as CSV (`ncu -i rep.ncu-rep --page source --csv --print-source sass`, what
`gpu_run.sh ncusrc` writes as src_<scenario>_<impl>.sass.csv, with SourceCounters collected). The loops are found as
scripts/sass_loop.py finds them in cuobjdump's text: the smallest backward branch around each cluster of HGMMA
instructions (a peeled mainloop: a masked and a steady loop). For every loop: its warp-level iterations (the
executed count of its first instruction), instructions executed per iteration, its share of all executed
instructions and stall samples, and its top opcodes by executed count, a loop's own code only (a tile loop
without the block loops it holds); then the same for everything outside the loops. A tile's code (the first
block, the last PV, the epilogue, the walk) may sit in two loops of one iteration per tile where ptxas rotated the
tile loop; the producer's code is among them. Static SASS counts over-count code that runs on one path of two
(ptxas often duplicates a loop body per branch); these counts are dynamic.
"""
from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sass_loop import hgmma_loops, opcode  # noqa: E402


def _col(header: list[str], name: str) -> int | None:
    for i, h in enumerate(header):
        if h.strip().lower() == name.lower():
            return i
    return None


def _num(text: str) -> int:
    try:
        return int(float(text.replace(",", "")))
    except ValueError:
        return 0


def read_source_csv(path: Path) -> list[tuple[int, str, int, int]]:
    """(address, SASS text, warp-level executions, stall samples) per instruction; ValueError names what is missing."""
    with path.open(newline="", errors="replace") as f:
        rows = [r for r in csv.reader(f) if r]
    start = next((i for i, r in enumerate(rows) if _col(r, "Address") is not None and _col(r, "Source") is not None),
                 None)
    if start is None:
        raise ValueError(f"{path}: no header with 'Address' and 'Source' columns; is it ncu's --page source --csv?")
    header = rows[start]
    addr, src, ex = _col(header, "Address"), _col(header, "Source"), _col(header, "Instructions Executed")
    samples = _col(header, "Warp Stall Sampling (All Samples)")
    if ex is None:
        raise ValueError(f"{path}: no 'Instructions Executed' column; profile with --section SourceCounters")
    out = []
    for r in rows[start + 1:]:
        if len(r) <= max(addr, src, ex) or not r[addr].startswith("0x"):
            continue
        out.append((int(r[addr], 16), r[src].strip(), _num(r[ex]),
                    _num(r[samples]) if samples is not None and len(r) > samples else 0))
    if not out:
        raise ValueError(f"{path}: no instruction rows")
    return out


def regions(ins: list[tuple[int, str, int, int]]) -> list[tuple[str, int, list[tuple[int, str, int, int]]]]:
    """[(name, iterations, instructions)]: each HGMMA loop by address without the loops nested in it ("loop 1
    (holds 2)": a tile loop around a block loop), then "outside loops"."""
    loops = hgmma_loops([(a, s) for a, s, _, _ in ins])
    out, inside = [], set()
    for k, (first, last) in enumerate(loops):
        nested = [j for j, (f, la) in enumerate(loops) if j != k and first <= f and la <= last]
        own = set(range(first, last + 1)).difference(*(range(loops[j][0], loops[j][1] + 1) for j in nested))
        name = f"loop {k + 1}" + (f" (holds {', '.join(str(j + 1) for j in nested)})" if nested else "")
        out.append((name, ins[first][2], [ins[i] for i in sorted(own)]))
        inside.update(own)
    out.append(("outside loops", 0, [x for i, x in enumerate(ins) if i not in inside]))
    return out


def report(path: Path, ins: list[tuple[int, str, int, int]], top: int) -> list[str]:
    total_ex = sum(x[2] for x in ins) or 1
    total_samples = sum(x[3] for x in ins) or 1
    lines = [f"== {path.name}: {total_ex:,} warp instructions executed, {total_samples:,} stall samples"]
    for name, iters, part in regions(ins):
        ex = sum(x[2] for x in part)
        samples = sum(x[3] for x in part)
        share = f"{100 * ex / total_ex:5.1f} % of executed, {100 * samples / total_samples:5.1f} % of samples"
        per = f", {ex / iters:.1f} executed per iteration" if iters else ""
        lines.append(f"  {name} ({len(part)} static): {iters:,} iterations{per}; {share}" if name.startswith("loop")
                     else f"  {name} ({len(part)} static): {ex:,} executed; {share}")
        mix: collections.Counter[str] = collections.Counter()
        for _, s, e, _ in part:
            if s:
                mix[opcode(s)] += e
        lines.append("    " + "  ".join(f"{op} {n:,}" for op, n in mix.most_common(top)))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csvs", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=12, help="opcodes shown per region")
    args = ap.parse_args(argv)
    try:
        parsed = [(p, read_source_csv(p)) for p in args.csvs]
    except (OSError, ValueError) as e:
        print(f"ncu_regions: {e}", file=sys.stderr)
        return 2
    for path, ins in parsed:
        print("\n".join(report(path, ins, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
