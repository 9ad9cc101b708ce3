"""Rung 04's CAUSAL_PERSIST tile walk on the CPU: the real cta_walk, cta_tile and tile_of, cut out of the .cu and
compiled for the host, visit every query block of every head once, in the order the kernel's pairing promises;
and the CAUSAL_PERSIST=32 build spills nothing (ptxas -v), which a walk whose loop exits on cta_tile's result did."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from grid_plan import braced, fast_div_block  # noqa: E402  (the rung's own text cut at matching braces, one helper for both)

KERNEL = ROOT / "kernels" / "attn_fwd" / "ladder" / "04_pingpong.cu"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the tile walk)")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

# The host side of the walk: blockIdx/gridDim are globals the driver sets per CTA; CUDA's qualifiers vanish.
PRELUDE = """#include <algorithm>
#include <cstdio>
using std::min;
#define __device__
#define CAUSAL_LPT_WALK 1
#define __forceinline__ inline
struct HostDim { unsigned x; };
struct __nv_bfloat16 { unsigned short bits; };   // Params holds PACK_GQA's Q and O pointers
static HostDim blockIdx, gridDim;
"""
# stdin: one case a line (n_mblocks n_splits batch heads_q group causal pairs lpt_units pair_units grid lpt_walk);
# stdout: per case "case N", then per CTA and tile "cta k m_block split bh b h hk" of cta_walk's body calls.
DRIVER = """
int main() {
    Params p{};
    int grid, n = 0;
    while (scanf("%d %d %d %d %d %d %d %d %d %d %d", &p.n_mblocks, &p.n_splits, &p.batch, &p.heads_q, &p.group,
                 &p.causal, &p.pairs, &p.lpt_units, &p.pair_units, &grid, &p.lpt_walk) == 11) {
        printf("case %d\\n", n++);
        const int n_tiles = p.n_mblocks * p.n_splits * p.batch * p.heads_q;
        gridDim.x = grid;
        for (int c = 0; c < grid; ++c) {
            blockIdx.x = c;
            cta_walk(p, n_tiles, [&](const Tile& t, int k) {
                printf("%d %d %d %d %d %d %d %d\\n", c, k, t.m_block, t.split, t.bh, t.b, t.h, t.hk);
            });
        }
    }
    return 0;
}
"""


def tile_maths_source(src: str) -> str:
    """Params, Tile and tile_of as the kernel has them (with FAST_DIVMOD's divisors and macros)."""
    return "\n".join([fast_div_block(src), braced(src, "struct Params {", ";"), braced(src, "struct Tile {", ";"),
                      braced(src, "template <bool kPack = false>\n__device__ __forceinline__ Tile tile_of(")])


def host_walk_source() -> str:
    src = KERNEL.read_text()
    persist = re.search(r"#if CAUSAL_PERSIST\n(__device__ __forceinline__ int cta_tile.*?)#endif\n", src, re.S)
    assert persist, "04_pingpong.cu: no `#if CAUSAL_PERSIST` block starting with cta_tile"
    return PRELUDE + tile_maths_source(src) + "\n" + persist.group(1) + DRIVER


def host_build(work: Path, name: str, source: str) -> Path:
    """`source` compiled for the host with g++ in `work`: the executable's path."""
    (work / f"{name}.cpp").write_text(source)
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-o", name, f"{name}.cpp"], cwd=work,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    return work / name


@pytest.fixture(scope="module")
def walker(tmp_path_factory):
    return host_build(tmp_path_factory.mktemp("walk"), "walk", host_walk_source())


def walk(walker, cases: list[dict]) -> list[dict[int, list[tuple]]]:
    """Per case: CTA -> [(k, m_block, split, bh, b, h, hk), ...] in the order cta_walk hands them out."""
    keys = ("n_mblocks", "n_splits", "batch", "heads_q", "group", "causal", "pairs", "lpt_units", "pair_units", "grid",
            "lpt_walk")
    stdin = "".join(" ".join(str(c.get(k, 0)) for k in keys) + "\n" for c in cases)
    run = subprocess.run([str(walker)], input=stdin, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out: list[dict[int, list[tuple]]] = []
    for line in run.stdout.splitlines():
        if line.startswith("case"):
            out.append({})
            continue
        cta, *rest = map(int, line.split())
        out[-1].setdefault(cta, []).append(tuple(rest))
    assert len(out) == len(cases)
    return out


def paired_case(n, batch, heads_q, group, sms, persist):
    """A causal paired grid as launch() sets it up: n_splits 1, P = n - n/2 pairs per head, persistent: the grid
    strides over those pairs with at most `sms` CTAs; else a CTA per pair (its tiles c and c + grid)."""
    units = (n - n // 2) * batch * heads_q
    return dict(n_mblocks=n, n_splits=1, batch=batch, heads_q=heads_q, group=group, causal=1, pairs=1, lpt_units=0,
                pair_units=units if persist else 0, grid=min(units, sms) if persist else units)


def expected_pair_walk(c, case):
    """The promised order (must match cta_tile's comment): units u = c, c + grid, ...; of each, the long block
    n-1-r of head bh = u / P (r = u % P), then the short block r of the same head unless r is odd n's middle."""
    n, grid, heads = case["n_mblocks"], case["grid"], case["heads_q"]
    P, P2 = n - n // 2, n // 2
    seq = []
    for u in range(c, case["pair_units"], grid):
        bh, r = divmod(u, P)
        seq.append((n - 1 - r, bh))
        if r < P2:
            seq.append((r, bh))
    return [(k, m, 0, bh, bh // heads, bh % heads, bh % heads // case["group"]) for k, (m, bh) in enumerate(seq)]


def assert_every_tile_once(case, ctas):
    tiles = [(m, split, bh) for seq in ctas.values() for (_, m, split, bh, *_) in seq]
    want = {(m, s, bh) for m in range(case["n_mblocks"]) for s in range(case["n_splits"])
            for bh in range(case["batch"] * case["heads_q"])}
    assert len(tiles) == len(set(tiles)) and set(tiles) == want, case
    for seq in ctas.values():
        assert [k for k, *_ in seq] == list(range(len(seq))), case   # k: the Q barriers' phase counter
        for _, m, split, bh, b, h, hk in seq:
            assert (b, h, hk) == (bh // case["heads_q"], bh % case["heads_q"], bh % case["heads_q"] // case["group"])


PAIRED = [(n, batch, heads, group, sms) for n in (2, 3, 4, 5, 7, 8, 16, 31, 32) for batch, heads, group in
          ((1, 1, 1), (1, 3, 1), (2, 5, 5), (4, 8, 2), (3, 28, 7)) for sms in (1, 7, 132)]


@needs_gxx
def test_persistent_pairs_walk_the_promised_order_and_cover_every_block_once(walker):
    cases = [paired_case(*shape, persist=True) for shape in PAIRED]
    for case, ctas in zip(cases, walk(walker, cases)):
        assert_every_tile_once(case, ctas)
        assert sorted(ctas) == list(range(case["grid"])), case   # every CTA has work: grid <= pair units
        for c, seq in ctas.items():
            assert seq == expected_pair_walk(c, case), (case, c)


@needs_gxx
def test_non_persistent_grids_keep_one_tile_per_cta_or_pair_and_the_stride(walker):
    """CAUSAL_PERSIST builds send every grid through cta_walk: a CTA per pair (n over the limit), causal LPT
    chunks, and the non-causal persistent stride must stay what they were (tiles c, c + grid, ...)."""
    cases = [paired_case(*shape, persist=False) for shape in PAIRED[::4]]
    for n, splits, batch, heads, lpt, sms in ((5, 1, 2, 3, 6, 132), (9, 2, 1, 4, 8, 132), (4, 1, 3, 2, 0, 5)):
        tiles = n * splits * batch * heads
        cases.append(dict(n_mblocks=n, n_splits=splits, batch=batch, heads_q=heads, group=1, causal=int(sms > 100),
                          pairs=0, lpt_units=lpt, pair_units=0, grid=tiles if sms > 100 else sms))
    for case, ctas in zip(cases, walk(walker, cases)):
        assert_every_tile_once(case, ctas)
        tiles = case["n_mblocks"] * case["n_splits"] * case["batch"] * case["heads_q"]
        for c, seq in ctas.items():
            assert len(seq) == len(range(c, tiles, case["grid"])), (case, c)
        if case["pairs"]:   # tile_of's halves: CTA c runs long block n-1-c%P of head c/P, then short c%P2 of c/P2
            n = case["n_mblocks"]
            P, P2 = n - n // 2, n // 2
            for c, seq in ctas.items():
                assert [(m, bh) for _, m, _, bh, *_ in seq] == [(n - 1 - c % P, c // P), (c % P2, c // P2)][:len(seq)]


def test_producer_and_consumers_take_their_tiles_from_the_same_walk():
    """Both roles' loops must be cta_walk in the walk instantiation (kWalk), or their tile (and Q phase) sequences
    may part."""
    kernel = braced(KERNEL.read_text(), "attn_wgmma_kernel(const __grid_constant__")
    persist_loops = re.findall(r"if constexpr \(kWalk == 1\) \{\n\s*(.*)\n", kernel)
    assert persist_loops == ["cta_walk(p, n_tiles, [&](const Tile& t, int k) {"] * 2, persist_loops
    # kWalk 2 (the atomic counter): only the producer fetches; the consumers take each tile from its Q slot
    assert kernel.count("walk_fetch()") == 2 and "ld_shared_s32(bar.tile_slot(buf))" in kernel
    assert kernel.count("publish_walk_end<C>(bar, k);") == 1 and "if constexpr (kWalk == 2) {" in kernel


NO_DYN = ["-DDYN_CHUNKS=0", "-DDYN_LONG=0", "-DPAIR_TAIL=0"]   # without the counter's walk: no kWalk 2 instantiation


@needs_nvcc
@pytest.mark.parametrize("defines", [["-DCAUSAL_PERSIST=32", *NO_DYN], ["-DCAUSAL_PERSIST=32", "-DTIMELINE=1", *NO_DYN],
                                     ["-DCAUSAL_PERSIST=32", "-DCAUSAL_LPT_WALK=1", *NO_DYN],
                                     ["-DCAUSAL_PERSIST=32", "-DDYN_CHUNKS=1"]])
def test_causal_persist_build_spills_nothing(tmp_path, defines):
    """Before cta_walk fixed its trip count every instantiation spilled 48-108 bytes (stores) in the producer. Each
    configuration has two kernels here: the plain loop (i0, the default build's code) and the walk (i1); the
    atomic counter's walk (i2, DYN_CHUNKS) a third."""
    build = subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin",
                            "-Xptxas", "-v", *defines, "-o", str(tmp_path / "k.cubin"), str(KERNEL)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    spills, kernel = {}, None
    for line in build.stderr.splitlines():
        if "Compiling entry function" in line:
            kernel = re.search(r"Cfg(I\w+?)EEL([bi][0-2])EEEv", line).groups() if "attn_wgmma_kernel" in line else None
        elif kernel and "spill stores" in line:
            spills[kernel] = tuple(map(int, re.findall(r"(\d+) bytes spill", line)))
    # (Cfg64, Cfg64c, Cfg64w3, Cfg64s, Cfg128, Cfg128c, Cfg128m, Cfg128s, Cfg256) x (b0, b1), and PACK_GQA's
    # Packed<Cfg, kTma> (b0) for kTma false (the consumers load Q) and true (TMA boxes); Cfg128m is v27's 112 keys
    assert len(spills) == (45 if "-DDYN_CHUNKS=1" in defines else 36), spills
    if "-DTIMELINE=1" in defines:
        # the diagnostics build's d256 consumer (its clock marks live across the loop) spills 4-44 bytes since
        # v13's peeled mask loop (clean-clone CI, 2026-12-03); its timings are instrumented anyway. No other may
        # and so does the d64 three-consumer one (160 registers) since its 128-key tile (v15, run 35)
        spills = {k: v for k, v in spills.items() if not k[0].startswith(("ILi256", "ILi64ELi128ELi3"))}
    assert all(s == (0, 0) for s in spills.values()), spills


@needs_nvcc
def test_short_key_block_build_spills_nothing(tmp_path):
    """The default build (v27: D128_BN_SHORT 112, run 93): the 112-key non-causal d128 configuration (Cfg128m, its
    walk kernels and its packed ones) beside every other one, none spilling; its n112 GEMM needs the generated
    wrapper."""
    build = subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin",
                            "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(KERNEL)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    functions = re.findall(r"Compiling entry function '(\w+)'", build.stderr)
    assert any("CfgILi128ELi112E" in f for f in functions), functions
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", build.stderr)
    assert len(spills) == len(functions) and all(s == ("0", "0") for s in spills), spills

@needs_gxx
def test_the_lpt_walk_covers_every_tile_once_in_rounds_of_alternating_direction(walker):
    """CAUSAL_LPT_WALK: one LPT order over the whole grid (lpt_units = every unit), a persistent grid of g CTAs;
    CTA c takes order positions c, 2g-1-c, 2g+c, ... (scripts/causal_schedule_model.py's boustrophedon)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("csm", ROOT / "scripts" / "causal_schedule_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    cases = []
    for n, batch, heads, group, grid in ((24, 2, 16, 1, 132), (8, 2, 16, 2, 132), (12, 1, 3, 1, 7), (5, 3, 4, 4, 11),
                                         (127, 1, 2, 1, 132), (3, 1, 1, 1, 2)):
        units = batch * heads
        cases.append(dict(n_mblocks=n, n_splits=1, batch=batch, heads_q=heads, group=group, causal=1, pairs=0,
                          lpt_units=units, pair_units=0, grid=grid, lpt_walk=1))
    for case, ctas in zip(cases, walk(walker, cases)):
        assert_every_tile_once(case, ctas)
        n, units, grid = case["n_mblocks"], case["batch"] * case["heads_q"], case["grid"]
        for c, seq in ctas.items():
            # tile_of's LPT order: position i is block n-1-i//units of unit i%units
            want = [(n - 1 - i // units, i % units) for i in model.boustrophedon(n * units, grid, c)]
            assert [(m, bh) for _, m, _, bh, *_ in seq] == want, (case, c)


@needs_gxx
def test_the_lpt_walk_over_chunks_of_heads_covers_every_tile_once(walker):
    """The walk over tile_of's chunked LPT order (lpt_units < every unit, a last chunk smaller; run 51 measured it):
    each CTA's positions are the boustrophedon's, each position the chunk's longest block first."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("csm", ROOT / "scripts" / "causal_schedule_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    cases = [dict(n_mblocks=n, n_splits=1, batch=batch, heads_q=heads, group=1, causal=1, pairs=0, lpt_units=c,
                  pair_units=0, grid=grid, lpt_walk=1)
             for n, batch, heads, c, grid in ((64, 2, 16, 4, 132), (8, 3, 5, 4, 11), (71, 2, 16, 6, 132))]
    for case, ctas in zip(cases, walk(walker, cases)):
        assert_every_tile_once(case, ctas)
        n, c, grid = case["n_mblocks"], case["lpt_units"], case["grid"]
        units = case["batch"] * case["heads_q"]

        def position(i):
            chunk, r = divmod(i, c * n)
            size = min(c, units - chunk * c)
            return n - 1 - r // size, chunk * c + r % size
        for cta, seq in ctas.items():
            want = [position(i) for i in model.boustrophedon(n * units, grid, cta)]
            assert [(m, bh) for _, m, _, bh, *_ in seq] == want, (case, cta)


# PAIR_TAIL's order (tile_of with p.tail_heads > 0), enumerated on the host: stdin "n_mblocks batch heads_q tail_heads"
# per case; stdout per case "case N", then "m_block bh" for every id in order.
PAIR_TAIL_DRIVER = """
int main() {
    Params p{};
    int n = 0;
    while (scanf("%d %d %d %d", &p.n_mblocks, &p.batch, &p.heads_q, &p.tail_heads) == 4) {
        p.n_splits = 1; p.group = 1; p.causal = 1;
        printf("case %d\\n", n++);
        for (int id = 0; id < p.n_mblocks * p.batch * p.heads_q; ++id) {
            const Tile t = tile_of(p, id);
            printf("%d %d\\n", t.m_block, t.bh);
        }
    }
    return 0;
}
"""


@needs_gxx
def test_the_pair_tail_order_is_each_heads_pairs_then_the_tail_heads_longest_first(tmp_path):
    source = PRELUDE + "#define PAIR_TAIL 1\n" + tile_maths_source(KERNEL.read_text()) + PAIR_TAIL_DRIVER
    order_exe = host_build(tmp_path, "order", source)
    cases = [(n, batch, heads, tail) for n in (1, 2, 3, 4, 7, 8, 16, 32) for batch, heads in ((1, 1), (2, 3), (4, 16))
             for tail in (1, 2, 5, 64) if tail <= batch * heads]
    run = subprocess.run([str(order_exe)], input="".join(" ".join(map(str, c)) + "\n" for c in cases),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    orders = [[tuple(map(int, line.split())) for line in block.strip().splitlines()[1:]]
              for block in ("\n" + run.stdout).split("\ncase ")[1:]]
    assert len(orders) == len(cases)
    for (n, batch, heads, tail), order in zip(cases, orders):
        units = batch * heads
        assert sorted(order) == sorted((m, bh) for m in range(n) for bh in range(units)), (n, batch, heads, tail)
        lead = (units - tail) * n
        mirrored = [m for j in range(n - n // 2) for m in ((n - 1 - j, j) if j < n // 2 else (n - 1 - j,))]
        for bh in range(units - tail):   # the head-major part: each head's mirrored pairs, n-1, 0, n-2, 1, ...
            assert order[bh * n:(bh + 1) * n] == [(m, bh) for m in mirrored], (n, batch, heads, tail, bh)
        assert order[lead:] == [(m, bh) for m in range(n - 1, -1, -1) for bh in range(units - tail, units)]
