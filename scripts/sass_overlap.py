"""Does the softmax run under the PV GEMM? Counts, in a kernel's steady-state SASS loop, the exponentials (MUFU.EX2)
between the wait for S (WARPGROUP.DEPBAR.LE gsb0, 0x1) and the wait for PV (WARPGROUP.DEPBAR.LE gsb0, 0x0).

    cuobjdump --dump-sass build/04.so > 04.sass && python3 scripts/sass_overlap.py 04.sass [CfgILi128ELi128E ...]

ptxas may hoist the wait for PV_{i-1} above the exponentials of block i (it did for 04 v7 under nvcc 13.0: ncu's
stall sampling put 10 % of all samples on that wait, FA3's own kernel ~0.5 %), which serialises the softmax behind
the PV GEMM: the intra-warpgroup overlap is then only the row max.
"""
from __future__ import annotations

import sys

from sass_loop import functions, steady_loop


def overlap(ins: list[tuple[int, str]]) -> tuple[int, int, int]:
    """(exponentials before the wait for S, between it and the wait for PV, after the wait for PV) in the loop."""
    span = steady_loop(ins)
    if span is None:
        return (0, 0, 0)
    body = [t for _, t in ins[span[0]:span[1] + 1]]
    w1 = next((i for i, t in enumerate(body) if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in t), None)
    w0 = next((i for i, t in enumerate(body) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in t and (w1 is None or i > w1)), None)
    if w1 is None or w0 is None:
        return (0, 0, 0)
    ex = [i for i, t in enumerate(body) if "MUFU.EX2" in t]
    return (sum(i < w1 for i in ex), sum(w1 < i < w0 for i in ex), sum(i > w0 for i in ex))


def main(argv: list[str]) -> int:
    funcs = functions(open(argv[0]).read())
    wanted = argv[1:] or ["attn_wgmma_kernel"]
    for name, ins in funcs.items():
        if any(w in name for w in wanted) and "attn_wgmma" in name:
            before, under, after = overlap(ins)
            cfg = name.split("Cfg")[-1][:28] if "Cfg" in name else name[:40]
            print(f"{cfg:30s} exp2 before S-wait {before:3d}  under PV (between the waits) {under:3d}  "
                  f"after PV-wait {after:3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
