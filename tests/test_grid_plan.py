"""Rung 04's launch rules on the CPU: the real plan_grid (which grid and which walk a launch takes), pack_gqa,
choose_splits, has_keyless_tiles and pads_less, cut out of the .cu with its knob defaults and compiled with g++. Each
case is a shape class whose walk a GPU run chose (docs/kernel_ladder.md, the run in the comment); a changed rule that
moves one of them fails here before any device time is spent."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "kernels" / "attn_fwd" / "ladder" / "04_pingpong.cu"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the launch rules)")

PRELUDE = """#include <algorithm>
#include <cstdio>
using std::min;
#define __device__
#define __forceinline__ inline
struct __nv_bfloat16 { unsigned short bits; };
"""
# A stand-in for Cfg: only what the rules read. d256's O staged in V as the rung's Cfg<256, 80, 2> has it.
CFG = """
template <int D_, int BN_, bool O_IN_V_>
struct TestCfg { static constexpr int D = D_, BN = BN_, BM = 128; static constexpr bool O_IN_V = O_IN_V_; };
"""
# stdin per case: "D batch heads_q heads_kv seqlen_q seqlen_k causal"; the Params set up as launch<C> does before
# its plan (splits from choose_splits for 132 SMs); stdout per case: "pairs pair_units lpt_units lpt_walk tail ctas".
DRIVER = """
template <class C>
void plan_case(int batch, int hq, int hkv, int sq, int sk, int causal) {
    const int sms = 132;
    Params p{};
    const Call a{nullptr, nullptr, nullptr, nullptr, nullptr, batch, hq, hkv, sq, sk, causal, 1.f};
    p.batch = batch; p.heads_q = hq; p.heads_kv = hkv; p.seqlen_q = sq; p.seqlen_k = sk; p.causal = causal;
    p.group = hq / hkv;
    p.pack = PACK_GQA && pack_gqa(sq, p.group, C::BM) ? p.group : 1;
    const int heads_grid = p.pack > 1 ? hkv : hq;
    p.n_mblocks = (int)(((long long)sq * p.pack + C::BM - 1) / C::BM);
    int kend = sk;
    if (causal) kend = min(kend, (int)((p.n_mblocks * (long long)C::BM - 1) / p.pack) + 1 + sk - sq);
    const int max_blocks = kend > 0 ? (kend + C::BN - 1) / C::BN : 0;
    const long long ctas = (long long)p.n_mblocks * batch * heads_grid;
    int splits = choose_splits(ctas, max_blocks, sms);
    p.blocks_per_split = splits > 1 ? (max_blocks + splits - 1) / splits : (max_blocks > 0 ? max_blocks : 1);
    if (splits > 1) splits = (max_blocks + p.blocks_per_split - 1) / p.blocks_per_split;
    p.n_splits = splits;
    const long long launched = plan_grid<C>(p, a, sms, splits, ctas * splits, heads_grid);
    int tail = -1;
#if PAIR_TAIL
    tail = p.tail_heads;
#endif
    printf("%d %d %d %d %d %lld\\n", p.pairs, p.pair_units, p.lpt_units, p.lpt_walk, tail, launched);
}
int main() {
    int d, b, hq, hkv, sq, sk, c;
    while (scanf("%d %d %d %d %d %d %d", &d, &b, &hq, &hkv, &sq, &sk, &c) == 7) {
        if (d == 256) plan_case<TestCfg<256, 80, true>>(b, hq, hkv, sq, sk, c);
        else if (c || sk <= D128_BN_SWITCH) plan_case<TestCfg<128, 128, false>>(b, hq, hkv, sq, sk, c);
        else plan_case<TestCfg<128, 176, false>>(b, hq, hkv, sq, sk, c);
    }
    int sk_cases[] = {150, 176, 177, 333, 352, 700, 1024, 1400, 3000};
    for (int s : sk_cases) printf("pads %d %d\\n", s, pads_less(s, 176, 128) ? 1 : 0);
    return 0;
}
"""


def braced(src: str, start: str, tail: str = "") -> str:
    at = src.index(start)
    depth, i = 0, src.index("{", at)
    while True:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            return src[at:i + 1] + tail
        i += 1


def knob_defaults(src: str) -> str:
    """The knobs section's #ifndef/#define/#endif lines (the rung's defaults, overridable with -D)."""
    section = src[src.index("// ---- knobs"):]
    section = section[:section.index("// ====")]
    return "\n".join(line for line in section.splitlines() if line.startswith(("#ifndef", "#define", "#endif")))


def rules_source() -> str:
    src = KERNEL.read_text()
    parts = [PRELUDE, knob_defaults(src), braced(src, "struct Params {", ";"),
             braced(src, "bool pack_gqa("), braced(src, "int choose_splits("),
             braced(src, "inline bool has_keyless_tiles("), braced(src, "inline bool pads_less("),
             braced(src, "struct Call {", ";"), CFG, "template <class C>\n" + braced(src, "long long plan_grid("),
             DRIVER]
    return "\n".join(parts)


def plans(tmp_path: Path, cases: list[tuple], defines: tuple = ()) -> tuple[list[tuple], dict[int, int]]:
    (tmp_path / "plan.cpp").write_text(rules_source())
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", *defines, "-o", "plan", "plan.cpp"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(tmp_path / "plan")], input="".join(" ".join(map(str, c)) + "\n" for c in cases),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    rows = [tuple(map(int, line.split())) for line in lines if not line.startswith("pads")]
    pads = {int(line.split()[1]): int(line.split()[2]) for line in lines if line.startswith("pads")}
    return rows, pads


def walk(row: tuple) -> str:
    """The walk a plan row names: pairs, pair_units, lpt_units, lpt_walk, tail_heads, CTAs."""
    pairs, pair_units, _, lpt_walk, tail, _ = row
    if lpt_walk == 2:
        return "pair_tail" if tail > 0 else "counter"
    if lpt_walk == 1:
        return "static_walk"
    if pair_units > 0:
        return "persistent_pairs"
    return "pairs_per_cta" if pairs else "cta_per_tile"


# (name, (head_dim, batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal), the walk v25 takes, why)
CASES = [
    ("B_h32x8_d128_c1_s2k", (128, 8, 32, 8, 2048, 2048, 1), "pair_tail", "run 73: GQA up to 32 blocks"),
    ("B_h32x8_d128_c1_s8k", (128, 2, 32, 8, 8192, 8192, 1), "static_walk", "64 blocks: the one-order walk"),
    ("B_h32x8_d128_c1_s16k", (128, 1, 32, 8, 16384, 16384, 1), "counter", "run 54: DYN_LONG from 128 blocks"),
    ("A_d128_c1_s4k", (128, 4, 16, 16, 4096, 4096, 1), "counter", "runs 67-68: DYN_PAIRS from 16 blocks"),
    ("A_d128_c1_s1k", (128, 16, 16, 16, 1024, 1024, 1), "pair_tail", "run 76: PAIR_TAIL 3"),
    ("A_d256_c1_s2k", (256, 8, 8, 8, 2048, 2048, 1), "persistent_pairs", "run 69: the order lost at d256"),
    ("B_h16x8_d256_c1_s8k", (256, 2, 16, 8, 8192, 8192, 1), "pair_tail", "run 73: GQA pairs relaunched before"),
    ("C_s3000_d128_c1", (128, 2, 16, 16, 3000, 3000, 1), "static_walk", "768 tiles: no pairs, no chunks"),
    ("A_d256_c1_s16k", (256, 1, 8, 8, 16384, 16384, 1), "cta_per_tile", "run 54: no counter walk at d256"),
    ("E_d256_q4097_k129_mqa_causal", (256, 1, 8, 1, 4097, 129, 1), "cta_per_tile", "runs 57-66: EMPTY_SOLO"),
    ("A_d128_c0_s4k", (128, 4, 16, 16, 4096, 4096, 0), "cta_per_tile", "non-causal: persistent, no walk"),
]


def test_each_measured_shape_class_gets_the_walk_its_runs_chose(tmp_path):
    rows, _ = plans(tmp_path, [shape for _, shape, _, _ in CASES])
    got = {name: walk(row) for (name, _, _, _), row in zip(CASES, rows)}
    assert got == {name: want for name, _, want, _ in CASES}
    by_name = dict(zip((c[0] for c in CASES), rows))
    assert by_name["A_d128_c0_s4k"][5] == 132                 # persistent: one CTA per SM
    assert by_name["E_d256_q4097_k129_mqa_causal"][5] == 264  # one CTA per tile: 33 query blocks x 8 heads
    for name in ("B_h32x8_d128_c1_s2k", "A_d128_c1_s1k", "B_h16x8_d256_c1_s8k", "A_d128_c1_s4k"):
        assert by_name[name][5] == 132, name                  # the counter's walks: one CTA per SM
    # PAIR_TAIL's tail covers >= 4 rounds of 132 tiles: ceil(4 * 132 / n) heads
    assert by_name["B_h32x8_d128_c1_s2k"][4] == -(-4 * 132 // 16)
    assert by_name["B_h16x8_d256_c1_s8k"][4] == -(-4 * 132 // 64)


def test_without_pair_tail_the_gqa_and_group_one_grids_fall_back(tmp_path):
    picked = [c for c in CASES if c[0] in ("B_h32x8_d128_c1_s2k", "A_d128_c1_s1k", "B_h16x8_d256_c1_s8k")]
    rows, _ = plans(tmp_path, [shape for _, shape, _, _ in picked], ("-DPAIR_TAIL=0",))
    assert [walk(r) for r in rows] == ["static_walk", "persistent_pairs", "pairs_per_cta"]


def test_pads_less_prefers_176_key_blocks_only_where_they_pad_5_percent_less(tmp_path):
    _, pads = plans(tmp_path, [])
    # 150: 176 against 256 keys; 333: 352 against 384; 700: 704 against 768; 1024, 1400, 3000: 128's pad no more
    assert pads == {150: 1, 176: 1, 177: 0, 333: 1, 352: 1, 700: 1, 1024: 0, 1400: 0, 3000: 0}
