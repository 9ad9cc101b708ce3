"""The steady-state loop of an attention kernel in SASS: its length and opcode mix, to compare with FA3's.

    cuobjdump --dump-sass build/04.so > 04.sass
    python3 scripts/sass_loop.py 04.sass CfgILi128ELi176ELb1ELi2E
    # FA3's kernel of the same tile, from its wheel (cuobjdump/nvdisasm: scripts/prep_sass_tools.sh):
    #   unzip the wheel; cuobjdump -xelf all fa3_fwd/_C.abi3.so; cuobjdump -res-usage <cubin> lists the functions;
    #   cuobjdump -sass -fun <mangled name> <cubin> > fa3.sass
    python3 scripts/sass_loop.py fa3.sass FlashAttnFwdSm90
    python3 scripts/sass_loop.py --counts 04.sass attn_wgmma   # whole-function counts of every match
    python3 scripts/sass_loop.py --all 04.sass CfgILi128ELi128ELi2E   # every HGMMA loop (a peeled mainloop: two)

The function is the first whose name contains the given text. The loop is the smallest one (a backward branch)
around the largest cluster of HGMMA instructions (the QK^T and PV GEMMs of one iteration). Static counts: a
branch the loop skips at run time (a mask for boundary blocks) is counted too.
"""
from __future__ import annotations

import collections
import re
import sys

_LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\*")
_BRA = re.compile(r"\bBRA(?:\.\w+)*\s+(?:`\()?.*?0x([0-9a-f]+)")


def functions(text: str) -> dict[str, list[tuple[int, str]]]:
    """Instructions (address, text) of each function in cuobjdump --dump-sass output."""
    out: dict[str, list[tuple[int, str]]] = {}
    for chunk in text.split("Function : ")[1:]:
        name, _, body = chunk.partition("\n")
        out[name.strip()] = [(int(m.group(1), 16), m.group(2)) for m in map(_LINE.match, body.splitlines()) if m]
    return out


def hgmma_clusters(ins: list[tuple[int, str]], gap: int = 60) -> list[list[int]]:
    idx = [i for i, (_, s) in enumerate(ins) if "HGMMA" in s]
    if not idx:
        return []
    clusters, cur = [], [idx[0]]
    for a, b in zip(idx, idx[1:]):
        if b - a > gap:
            clusters.append(cur)
            cur = []
        cur.append(b)
    return clusters + [cur]


def steady_loop(ins: list[tuple[int, str]]) -> tuple[int, int] | None:
    """(first, last) instruction index of the smallest loop around the largest HGMMA cluster."""
    clusters = hgmma_clusters(ins)
    return loop_around(ins, max(clusters, key=len)) if clusters else None


def hgmma_loops(ins: list[tuple[int, str]], min_hgmma: int = 8) -> list[tuple[int, int]]:
    """Every distinct smallest loop around an HGMMA cluster of at least min_hgmma: a mainloop peeled into a
    masked and an unmasked loop has two."""
    found = [loop_around(ins, c) for c in hgmma_clusters(ins) if len(c) >= min_hgmma]
    return sorted({lp for lp in found if lp is not None})


def loop_around(ins: list[tuple[int, str]], c: list[int]) -> tuple[int, int] | None:
    """(first, last) instruction index of the smallest backward branch's loop that holds cluster c."""
    where = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i in range(c[-1], len(ins)):
        m = _BRA.search(ins[i][1])
        if m:
            target = int(m.group(1), 16)
            if target <= ins[c[0]][0] and target in where and (best is None or i - where[target] < best[1] - best[0]):
                best = (where[target], i)
    return best


def opcode(s: str) -> str:
    words = s.split()
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return op.split(".")[0]


COUNTED = ("R2UR", "HGMMA", "MUFU", "FMNMX", "FSEL", "ISETP", "SYNCS", "BAR")


def counts_line(name: str, ins: list[tuple[int, str]]) -> str:
    """One line of whole-function counts (scripts/sass_counts.sh): instructions and the opcodes in COUNTED."""
    mix = collections.Counter(opcode(s) for _, s in ins)
    short = re.sub(r"EEEEv.*", "", re.sub(r".*CfgIL", "", name))
    return f"{short:<22s} instr {len(ins):5d}  " + "  ".join(f"{op} {mix[op]:4d}" for op in COUNTED)


def main(argv: list[str]) -> int:
    whole = argv[:1] == ["--counts"]
    every = argv[:1] == ["--all"]
    if whole or every:
        argv = argv[1:]
    if len(argv) != 2:
        print("usage: sass_loop.py [--counts | --all] SASS_FILE FUNCTION_SUBSTRING", file=sys.stderr)
        return 2
    path, want = argv
    try:
        text = open(path).read()
    except OSError as e:
        print(f"sass_loop: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    funcs = {n: i for n, i in functions(text).items() if want in n}
    if not funcs:
        print(f"sass_loop: no function containing {want!r} in {path} (is it cuobjdump --dump-sass output?)",
              file=sys.stderr)
        return 2
    if whole:   # every matching function, whole-function counts
        for name, ins in funcs.items():
            print(counts_line(name, ins))
        return 0
    name, ins = next(iter(funcs.items()))
    loops = hgmma_loops(ins) if every else [steady_loop(ins)]
    if not loops or loops[0] is None:
        print(f"sass_loop: {name[:80]}...: no HGMMA loop found", file=sys.stderr)
        return 1
    print(f"{name[:100]}")
    for first, last in loops:
        mix = collections.Counter(opcode(s) for _, s in ins[first:last + 1])
        print(f"  function {len(ins)} instructions; loop {ins[first][0]:#x}-{ins[last][0]:#x}: {last - first + 1} "
              f"instructions, HGMMA {mix['HGMMA']}")
        print("  " + " ".join(f"{k}:{v}" for k, v in mix.most_common(30)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
