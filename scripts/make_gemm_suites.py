"""Write the GEMM problem's suites (smoke, dev, full, edge) as CSV under kernels/gemm_bf16/suites/.

This script is the definition of the suites in code (issue 29 names their categories); tests/test_gemm_bf16_files.py
checks that the committed CSVs still equal its output. It needs nothing but the standard library.
    python scripts/make_gemm_suites.py

A row is one C = A.B with A m x k (row stride lda), B k x n (ldb), C m x n (ldc); strides in elements. In smoke,
dev and full every stride is a multiple of 8 (16-byte rows: TMA and vector loads apply) and rows are padded where
a size is not; edge holds the contract's corners: odd strides, zero sizes, one-element matrices.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import NamedTuple

SUITES_DIR = Path(__file__).resolve().parents[1] / "kernels" / "gemm_bf16" / "suites"
COLUMNS = ("name", "m", "n", "k", "lda", "ldb", "ldc", "dtype", "category")
CATEGORIES = {
    "square": "M = N = K",
    "skinny": "M or N <= 64 (decode, matrix-vector)",
    "k_heavy": "K much larger than M and N (split-K territory)",
    "ragged": "sizes that are no multiple of any tile, padded strides",
    "llm": "QKV, O and MLP projections of Llama-3-8B/70B-like models at 1-16k tokens",
    "edge": "corners of the contract: odd strides, zero sizes, K = 1",
}
# (hidden, q heads, kv heads, head dim, MLP intermediate) of Llama-3-8B and Llama-3-70B
MODELS = {"8b": (4096, 32, 8, 128, 14336), "70b": (8192, 64, 8, 128, 28672)}
LLM_TOKENS = {"8b": (1, 128, 2048, 16384), "70b": (1, 128, 2048, 8192)}


class Gemm(NamedTuple):
    name: str
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    category: str


def pad8(length: int) -> int:
    """The smallest multiple of 8 that holds a row of `length` elements (at least 8)."""
    return max(8, -(-length // 8) * 8)


def aligned(name: str, m: int, n: int, k: int, category: str, lda: int = 0, ldb: int = 0, ldc: int = 0) -> Gemm:
    """A GEMM whose strides are the rows padded to a multiple of 8 unless given (then they must be multiples)."""
    g = Gemm(name, m, n, k, lda or pad8(k), ldb or pad8(n), ldc or pad8(n), category)
    assert g.lda % 8 == 0 and g.ldb % 8 == 0 and g.ldc % 8 == 0, g
    return g


def tight(name: str, m: int, n: int, k: int, category: str = "edge") -> Gemm:
    """Strides equal to the row lengths (at least 1), odd where a size is odd."""
    return Gemm(name, m, n, k, max(1, k), max(1, n), max(1, n), category)


def _t(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)


def llm_shapes() -> list[Gemm]:
    out = []
    for model, (hidden, heads_q, heads_kv, head_dim, inter) in MODELS.items():
        projections = {  # name: (n, k) of the weight, y[tokens, n] = x[tokens, k] . W[k, n]
            "qkv": ((heads_q + 2 * heads_kv) * head_dim, hidden),
            "o": (hidden, heads_q * head_dim),
            # 8B: gate and up fused into one GEMM; 70B: one of the two (the same N, twice the K)
            "gateup" if model == "8b" else "up": (2 * inter if model == "8b" else inter, hidden),
            "down": (hidden, inter),
        }
        for tokens in LLM_TOKENS[model]:
            for proj, (n, k) in projections.items():
                out.append(aligned(f"L{model}_{proj}_t{_t(tokens)}", tokens, n, k, "llm"))
    return out


def full_suite() -> list[Gemm]:
    out = [aligned(f"S_{s}", s, s, s, "square") for s in (256, 512, 1024, 2048, 4096, 8192)]
    for m, n, k in [(1, 4096, 4096), (8, 8192, 8192), (16, 16384, 4096), (32, 4096, 16384), (64, 16384, 16384),
                    (8192, 1, 8192), (8192, 8, 8192), (16384, 16, 4096), (4096, 64, 16384)]:
        out.append(aligned(f"N_m{m}_n{n}_k{k}", m, n, k, "skinny"))
    for m, n, k in [(128, 128, 65536), (256, 256, 65536), (512, 512, 32768), (1024, 1024, 32768),
                    (2048, 2048, 16384), (128, 4096, 32768), (4096, 128, 32768)]:
        out.append(aligned(f"K_m{m}_n{n}_k{k}", m, n, k, "k_heavy"))
    out += [
        aligned("R_1000", 1000, 1000, 1000, "ragged"),
        aligned("R_1023x1025x1027", 1023, 1025, 1027, "ragged"),
        aligned("R_129x257x65", 129, 257, 65, "ragged"),
        aligned("R_777x3001x2999", 777, 3001, 2999, "ragged"),
        aligned("R_3000x5000x2056", 3000, 5000, 2056, "ragged"),
        aligned("R_4097x4095x4093", 4097, 4095, 4093, "ragged"),
        aligned("R_5000x77x3001", 5000, 77, 3001, "ragged"),
        aligned("R_8191x8193x1000", 8191, 8193, 1000, "ragged"),
        aligned("R_2048_padded", 2048, 2048, 2048, "ragged", lda=2056, ldb=2112, ldc=2064),
        aligned("R_4096_padded", 4096, 4096, 4096, "ragged", lda=4160, ldb=4224, ldc=4104),
    ]
    return out + llm_shapes()


DEV_NAMES = [
    # first the shapes that catch most bugs cheaply: ragged sizes, padded strides, a K tail
    "R_1000", "R_129x257x65", "R_2048_padded", "R_1023x1025x1027",
    "S_1024", "S_4096", "S_8192",
    "N_m1_n4096_k4096", "N_m16_n16384_k4096", "N_m8192_n8_k8192",
    "K_m256_n256_k65536", "K_m1024_n1024_k32768",
    "R_4097x4095x4093", "R_5000x77x3001",
    "L8b_qkv_t1", "L8b_qkv_t2k", "L8b_gateup_t2k", "L8b_down_t16k", "L70b_o_t2k", "L70b_down_t128",
]


def dev_suite() -> list[Gemm]:
    by_name = {g.name: g for g in full_suite()}
    return [by_name[n] for n in DEV_NAMES]


def smoke_suite() -> list[Gemm]:
    """Small shapes (a CPU fp32 reference takes milliseconds) with one of each feature; strides multiples of 8."""
    return [
        aligned("smoke_square", 64, 64, 64, "square"),
        aligned("smoke_ragged", 77, 33, 45, "ragged"),
        aligned("smoke_tiles", 129, 257, 65, "ragged"),
        aligned("smoke_strided", 128, 128, 128, "ragged", lda=136, ldb=144, ldc=136),
        aligned("smoke_skinny", 1, 200, 64, "skinny"),
        aligned("smoke_kheavy", 32, 48, 1000, "k_heavy"),
        aligned("smoke_llm", 16, 768, 256, "llm"),
        aligned("smoke_k0", 8, 16, 0, "edge"),
    ]


def edge_suite() -> list[Gemm]:
    """What the contract allows beyond the timed suites: odd strides (rows not 16-byte aligned), zero sizes, K = 1,
    one row or one column, strides much longer than the rows."""
    return [
        tight("E_1x1x1", 1, 1, 1),
        tight("E_m0", 0, 64, 64),
        tight("E_n0", 64, 0, 64),
        tight("E_k0_odd", 33, 65, 0),
        tight("E_k1", 257, 255, 1),
        tight("E_127x129x131", 127, 129, 131),
        tight("E_row_1x1000x1001", 1, 1000, 1001),
        tight("E_col_1000x1x999", 1000, 1, 999),
        tight("E_long_k_3x5x65537", 3, 5, 65537),
        tight("E_300_odd", 300, 300, 300),
        Gemm("E_odd_strides", 33, 65, 17, 19, 67, 71, "edge"),
        Gemm("E_301_strides", 300, 300, 300, 301, 303, 305, "edge"),
        Gemm("E_long_strides", 64, 64, 64, 4096, 4104, 4112, "edge"),
        aligned("E_one_tile", 128, 256, 64, "edge"),
        aligned("E_tile_plus_one", 129, 257, 65, "edge"),
    ]


SUITES = {"smoke": smoke_suite, "dev": dev_suite, "full": full_suite, "edge": edge_suite}


def suite_text(gemms: list[Gemm]) -> str:
    """The CSV text of a suite (header, one row per GEMM, LF line ends)."""
    lines = [",".join(COLUMNS)]
    lines += [f"{g.name},{g.m},{g.n},{g.k},{g.lda},{g.ldb},{g.ldc},bf16,{g.category}" for g in gemms]
    return "\n".join(lines) + "\n"


def read_suite(path: Path) -> list[Gemm]:
    """A suite CSV back as Gemm rows (the check script reads suites with this)."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.lstrip().startswith("#")))
    return [Gemm(r["name"], *(int(r[c]) for c in ("m", "n", "k", "lda", "ldb", "ldc")), r.get("category") or "user")
            for r in rows]


def main() -> None:
    SUITES_DIR.mkdir(parents=True, exist_ok=True)
    for name, make in SUITES.items():
        gemms = make()
        assert len({g.name for g in gemms}) == len(gemms), f"{name}: duplicate names"
        (SUITES_DIR / f"{name}.csv").write_text(suite_text(gemms))
        flops = sum(2.0 * g.m * g.n * g.k for g in gemms)
        print(f"{name}: {len(gemms)} GEMMs, {flops / 1e12:.2f} TFLOP per pass")


if __name__ == "__main__":
    main()
