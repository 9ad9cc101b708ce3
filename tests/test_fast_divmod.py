"""Rung 04's FAST_DIVMOD on the CPU: the multiply-and-shift division is exact for every dividend the kernel can pass
(0 <= n < 2^31) and any divisor >= 1, and tile_of with it hands out the same tiles as with int division, for every
walk (plain, pairs, LPT chunks with a short last chunk, PAIR_TAIL's tail) packed and unpacked. The real code is cut
out of the .cu and compiled with g++, as tests/test_persist_tiles.py does for the walk."""
import re
import shutil
import subprocess

import pytest

from test_persist_tiles import KERNEL, PRELUDE, host_build, tile_maths_source  # (puts scripts/ on the path)
from grid_plan import fast_div_block  # noqa: E402

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the tile maths)")


def grid_divs_source(src: str) -> str:
    """grid_divs (the host's divisors of a planned grid), as the kernel has it."""
    divs = re.search(r"#if FAST_DIVMOD\n// tile_of's divisors for the planned grid.*?\n}\n#endif\n", src, re.S)
    assert divs, "04_pingpong.cu: grid_divs moved (an `#if FAST_DIVMOD` block by launch)"
    return divs.group(0)


ARITH_DRIVER = """
#include <cstdint>
int main() {
    // divisors: all up to 4096, then spread to 2^31 - 1; dividends: the edges around multiples and random ones
    uint64_t x = 88172645463325252ull, bad = 0, checked = 0;
    auto rnd = [&]() { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
    for (long long d = 1; d < 0x7fffffffLL; d = d < 4096 ? d + 1 : d + 1 + (long long)(rnd() % (d / 3 + 1))) {
        const FastDiv f = make_fast_div((int)d);
        long long ns[8] = {0, d - 1, d, 2 * d - 1, 0x7fffffffLL, 0x7fffffffLL - 1, 0x7fffffffLL / d * d,
                           0x7fffffffLL / d * d - 1};
        for (long long n : ns)
            if (n >= 0 && n <= 0x7fffffffLL) { ++checked; bad += fast_div((int)n, f) != n / d; }
        for (int i = 0; i < 128; ++i) {
            const long long n = (long long)(rnd() % 0x80000000ull);
            ++checked;
            bad += fast_div((int)n, f) != n / d;
        }
    }
    printf("%llu %llu\\n", (unsigned long long)checked, (unsigned long long)bad);
    return 0;
}
"""

# stdin: one case a line (n_mblocks n_splits batch heads_q heads_kv pairs lpt_units tail_heads pack causal);
# stdout: per case every tile id's (m_block split bh b h hk).
TILES_DRIVER = """
int main() {
    Params p{};
    int pack;
    while (scanf("%d %d %d %d %d %d %d %d %d %d", &p.n_mblocks, &p.n_splits, &p.batch, &p.heads_q, &p.heads_kv,
                 &p.pairs, &p.lpt_units, &p.tail_heads, &pack, &p.causal) == 10) {
        p.group = p.heads_q / p.heads_kv;
        const int heads = pack ? p.heads_kv : p.heads_q;
#if FAST_DIVMOD
        p.divs = grid_divs(p, heads);
#endif
        const int tiles = p.n_mblocks * p.n_splits * p.batch * heads;
        printf("case\\n");
        for (int id = 0; id < tiles; ++id) {
            const Tile t = pack ? tile_of<true>(p, id) : tile_of<false>(p, id);
            printf("%d %d %d %d %d %d\\n", t.m_block, t.split, t.bh, t.b, t.h, t.hk);
        }
    }
    return 0;
}
"""


def tiles_source(fast: int) -> str:
    src = KERNEL.read_text()
    return (f"#define FAST_DIVMOD {fast}\n#define PAIR_TAIL 1\n" + PRELUDE + tile_maths_source(src) + "\n"
            + grid_divs_source(src) + TILES_DRIVER)


@needs_gxx
def test_fast_div_is_exact_over_the_kernels_dividends(tmp_path):
    exe = host_build(tmp_path, "arith", "#define FAST_DIVMOD 1\n" + PRELUDE + fast_div_block(KERNEL.read_text())
                     + ARITH_DRIVER)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    checked, bad = map(int, run.stdout.split())
    assert checked > 500_000 and bad == 0, run.stdout


def cases() -> list[tuple]:
    """(n_mblocks, n_splits, batch, heads_q, heads_kv, pairs, lpt_units, tail_heads, pack, causal) over every walk."""
    out = []
    for n in (1, 2, 3, 5, 8, 17):
        for batch, hq, hk in ((1, 1, 1), (2, 6, 3), (3, 28, 4), (1, 32, 8)):
            units = batch * hq
            out.append((n, 1, batch, hq, hk, 0, 0, 0, 0, 0))                      # plain, non-causal
            out.append((n, 3, batch, hq, hk, 0, 0, 0, 0, 1))                      # split, causal
            out.append((n, 1, batch, hq, hk, 0, 0, 0, 1, 1))                      # packed (grid heads: KV heads)
            if n >= 2:
                out.append((n, 1, batch, hq, hk, 1, 0, 0, 0, 1))                  # mirrored pairs
            for c in {1, 3, 5, units}:                                            # LPT chunks, short last chunk
                if c <= units:
                    out.append((n, 1, batch, hq, hk, 0, c, 0, 0, 1))
            for tail in {1, 2, units}:                                            # PAIR_TAIL's tail heads
                if tail <= units:
                    out.append((n, 1, batch, hq, hk, 0, 0, tail, 0, 1))
    return out


@needs_gxx
def test_tile_of_hands_out_the_same_tiles_with_fast_division(tmp_path):
    stdin = "".join(" ".join(map(str, c)) + "\n" for c in cases())
    outs = []
    for fast in (0, 1):
        exe = host_build(tmp_path, f"tiles{fast}", tiles_source(fast))
        run = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outs.append(run.stdout.split("case\n")[1:])
    assert len(outs[0]) == len(cases()) == len(outs[1])
    for case, slow, fast in zip(cases(), *outs):
        assert slow == fast, case
        assert slow.count("\n") > 0, case
