"""Write the built-in suites (smoke, dev26, full) as CSV under kernels/attn_fwd/suites/.

The issue that defines `full` spells out its four categories; this script is that definition in code, and
tests/test_scenarios.py checks the committed CSVs still equal its output.
    python scripts/make_suites.py
"""
from __future__ import annotations

from workbench.harness.scenarios import SUITES_DIR, Scenario, write_suite

GQA_SHAPES = [(32, 8, 128), (64, 8, 128), (28, 4, 128), (40, 8, 128), (64, 8, 64), (16, 8, 256)]
KV_CACHE_SHAPES = [(32, 8, 128), (64, 8, 128), (16, 8, 256)]


def _k(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def full_suite() -> list[Scenario]:
    out: list[Scenario] = []
    # A. FlashAttention benchmark grid: 16k tokens, hidden 2048
    for d in (64, 128, 256):
        for causal in (0, 1):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                h = 2048 // d
                out.append(Scenario(f"A_d{d}_c{causal}_s{_k(s)}", 16384 // s, h, h, s, s, d, bool(causal), "bf16", "A"))
    # B. GQA model shapes (Llama-style)
    for hq, hkv, d in GQA_SHAPES:
        for s in (1024, 2048, 4096, 8192, 16384, 32768):
            for causal in (0, 1):
                out.append(Scenario(f"B_h{hq}x{hkv}_d{d}_c{causal}_s{_k(s)}", max(1, 16384 // s), hq, hkv, s, s, d,
                                    bool(causal), "bf16", "B"))
    # C. ragged lengths that are not multiples of any tile size
    for s in (100, 1000, 1500, 3000, 5000, 9000):
        for d in (64, 128, 256):
            for causal in (0, 1):
                out.append(Scenario(f"C_s{s}_d{d}_c{causal}", 2, 16, 16, s, s, d, bool(causal), "bf16", "C"))
    # D1. prefill with a KV cache: causal, bottom-right aligned, Sq < Sk
    for sq in (128, 512, 2048):
        for sk in (4096, 16384):
            for hq, hkv, d in KV_CACHE_SHAPES:
                out.append(Scenario(f"D_prefill_q{sq}_k{_k(sk)}_h{hq}x{hkv}_d{d}", 1, hq, hkv, sq, sk, d, True,
                                    "bf16", "D"))
    # D2. non-causal cross-attention
    for sq in (1024, 4096):
        for sk in (77, 333, 1024, 4096, 8192):
            for d in (64, 128):
                out.append(Scenario(f"D_cross_q{_k(sq)}_k{_k(sk)}_d{d}", 4, 16, 16, sq, sk, d, False, "bf16", "D"))
    return out


DEV26_NAMES = [
    # A: every head_dim, both masks, short and long
    "A_d64_c0_s512", "A_d64_c1_s4k", "A_d128_c0_s2k", "A_d128_c1_s8k", "A_d128_c0_s16k", "A_d256_c0_s1k",
    "A_d256_c1_s4k", "A_d256_c1_s16k",
    # B: GQA ratios 4, 7, 8 and 2, long contexts
    "B_h32x8_d128_c1_s4k", "B_h64x8_d128_c0_s8k", "B_h28x4_d128_c1_s16k", "B_h40x8_d128_c0_s2k",
    "B_h64x8_d64_c1_s32k", "B_h16x8_d256_c1_s8k", "B_h32x8_d128_c0_s1k",
    # C: ragged lengths
    "C_s100_d64_c1", "C_s1000_d128_c0", "C_s1500_d256_c1", "C_s3000_d64_c0", "C_s9000_d128_c1",
    # D: KV-cache prefill and cross-attention
    "D_prefill_q128_k4k_h32x8_d128", "D_prefill_q512_k16k_h16x8_d256", "D_prefill_q2048_k16k_h64x8_d128",
    "D_cross_q1k_k77_d64", "D_cross_q4k_k333_d128", "D_cross_q1k_k8k_d128",
]


def dev26_suite() -> list[Scenario]:
    by_name = {s.name: s for s in full_suite()}
    return [by_name[n] for n in DEV26_NAMES]


def smoke_suite() -> list[Scenario]:
    """Tiny shapes a CPU fp32 reference handles in well under a second, covering every feature."""
    return [
        Scenario("smoke_basic", 1, 2, 2, 64, 64, 64, False, "bf16", "A"),
        Scenario("smoke_causal", 1, 2, 2, 128, 128, 128, True, "bf16", "A"),
        Scenario("smoke_gqa", 2, 4, 2, 96, 96, 128, True, "bf16", "B"),
        Scenario("smoke_ragged", 1, 2, 2, 77, 77, 64, True, "bf16", "C"),
        Scenario("smoke_d256", 1, 2, 1, 40, 40, 256, False, "bf16", "C"),
        Scenario("smoke_prefill", 1, 4, 1, 33, 200, 128, True, "bf16", "D"),
        Scenario("smoke_cross", 2, 2, 2, 50, 77, 64, False, "bf16", "D"),
        Scenario("smoke_emptyrows", 1, 2, 2, 70, 30, 64, True, "bf16", "user"),
    ]


def edge_suite() -> list[Scenario]:
    """The corners of the contract for every head_dim, on shapes small enough to check every row: one query
    or one key, rows that see no key (causal with Sq > Sk), whole query blocks that see none, lengths one
    past a tile, odd batch and head counts, GQA and MQA, short keys, and a long key range over few queries
    (split-KV)."""
    out: list[Scenario] = []
    for d in (64, 128, 256):
        out += [
            Scenario(f"E_d{d}_one_by_one", 1, 2, 2, 1, 1, d, False, "bf16", "E"),
            Scenario(f"E_d{d}_decode_causal", 2, 8, 2, 1, 1000, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q1000_k1_causal", 1, 2, 1, 1000, 1, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q129_k4097_gqa_causal", 1, 8, 2, 129, 4097, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q4097_k129_mqa_causal", 1, 8, 1, 4097, 129, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q333_k77_gqa", 2, 16, 4, 333, 77, d, False, "bf16", "E"),
            Scenario(f"E_d{d}_s64_causal", 1, 4, 4, 64, 64, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_s200_odd_heads", 3, 3, 3, 200, 200, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q2000_k300_causal", 1, 4, 2, 2000, 300, d, True, "bf16", "E"),
            Scenario(f"E_d{d}_q100_k16k_split", 1, 2, 1, 100, 16384, d, False, "bf16", "E"),
        ]
    return out


def gqa_short_suite() -> list[Scenario]:
    """Short queries over grouped K/V heads, where a kernel may pack a group's query heads into the rows of one
    tile (FA3's PackGQA, 04's PACK_GQA): every group size from 2 to 32, powers of two and not (3, 5, 7: no tile
    row count divides by them), decode (one query) over long keys (split-KV), causal and not, a packed row count
    one past a tile, for every head_dim."""
    out: list[Scenario] = []
    for d in (64, 128, 256):
        out += [
            Scenario(f"G_d{d}_q1_g8_k4395", 16, 64, 8, 1, 4395, d, False, "bf16", "G"),
            Scenario(f"G_d{d}_q1_g32_k16k_mqa", 2, 32, 1, 1, 16384, d, False, "bf16", "G"),
            Scenario(f"G_d{d}_q7_g4_k1031_causal", 32, 32, 8, 7, 1031, d, True, "bf16", "G"),
            Scenario(f"G_d{d}_q33_g16_k77", 8, 32, 2, 33, 77, d, False, "bf16", "G"),
            Scenario(f"G_d{d}_q40_g2_k300_causal", 4, 16, 8, 40, 300, d, True, "bf16", "G"),
            Scenario(f"G_d{d}_q60_g8_k333_causal", 4, 16, 2, 60, 333, d, True, "bf16", "G"),
            Scenario(f"G_d{d}_q17_g3_k1500_causal", 8, 24, 8, 17, 1500, d, True, "bf16", "G"),
            Scenario(f"G_d{d}_q5_g5_k2000_causal", 16, 40, 8, 5, 2000, d, True, "bf16", "G"),
            Scenario(f"G_d{d}_q3_g7_k513", 8, 28, 4, 3, 513, d, False, "bf16", "G"),
        ]
    return out


SUITES = {"smoke": smoke_suite, "dev26": dev26_suite, "full": full_suite, "edge": edge_suite,
          "gqa_short": gqa_short_suite}

if __name__ == "__main__":
    SUITES_DIR.mkdir(parents=True, exist_ok=True)
    for name, make in SUITES.items():
        scenarios = make()
        write_suite(SUITES_DIR / f"{name}.csv", scenarios)
        print(f"{name}: {len(scenarios)} scenarios")
