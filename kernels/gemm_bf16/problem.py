"""The bf16 GEMM's problem interface, the part without torch: a shape (Scenario), its suite row, its FLOP and byte
counts and its categories. The harness loads this module by path (workbench/harness/problems.py); judge.py beside
it is the part with torch, standins.py the CPU stand-ins; README.md is the contract, problem.toml the numbers.
kernels/attn_fwd/problem.py lists what a problem.py defines."""
from __future__ import annotations

from dataclasses import asdict, dataclass

NAME = "gemm_bf16"
COLUMNS = ("name", "m", "n", "k", "lda", "ldb", "ldc", "dtype")
DTYPES = ("bf16",)
# scripts/make_gemm_suites.py CATEGORIES, in report order
CATEGORY_NAMES = {
    "square": "M = N = K",
    "skinny": "M or N <= 64 (decode, matrix-vector)",
    "k_heavy": "K much larger than M and N (split-K territory)",
    "ragged": "sizes that are no multiple of any tile, padded strides",
    "llm": "QKV, O and MLP projections of Llama-3-8B/70B-like models at 1-16k tokens",
    "edge": "corners of the contract: odd strides, zero sizes, K = 1",
    "serving": "shapes of a real serving run (workbench suite from-flashinfer)",
    "user": "user shapes",
}
FLASHINFER_OP_TYPES = ("gemm", "gemm_bf16")     # FlashInfer-Bench's dataset name, and fi_trace's for mm_bf16


@dataclass(frozen=True)
class Scenario:
    """C (m x n, row stride ldc) = A (m x k, lda) . B (k x n, ldb); strides in elements."""
    name: str
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    dtype: str = "bf16"
    category: str = "user"
    problem: str = NAME

    @property
    def key(self) -> str:
        """Identity for caches: every number and the dtype, not the (user-chosen) name."""
        return f"gemm_m{self.m}_n{self.n}_k{self.k}_lda{self.lda}_ldb{self.ldb}_ldc{self.ldc}_{self.dtype}"

    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def min_bytes(self) -> float:
        """Each operand read once, C written once (bf16)."""
        return 2.0 * (self.m * self.k + self.k * self.n + self.m * self.n)

    def to_dict(self) -> dict:
        return asdict(self)


def _int(row: dict, column: str) -> int:
    raw = str(row[column]).strip()
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"column {column!r} must be an integer, got {raw!r}") from None


def scenario_from_row(row: dict) -> Scenario:
    """One suite row -> Scenario; ValueError with the reason when it breaks the contract (README.md)."""
    missing = [c for c in COLUMNS if row.get(c) is None or str(row.get(c)).strip() == ""]
    if missing:
        raise ValueError(f"missing value for {', '.join(missing)}")
    m, n, k, lda, ldb, ldc = (_int(row, c) for c in ("m", "n", "k", "lda", "ldb", "ldc"))
    negative = [c for c, v in zip("mnk", (m, n, k)) if v < 0]
    if negative:
        raise ValueError(f"{', '.join(negative)} must be >= 0")
    for column, value, least in (("lda", lda, max(1, k)), ("ldb", ldb, max(1, n)), ("ldc", ldc, max(1, n))):
        if value < least:
            raise ValueError(f"{column}={value} is shorter than a row ({least} elements)")
    dtype = str(row["dtype"]).strip().lower()
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {row['dtype']!r} (supported: {', '.join(DTYPES)})")
    category = (row.get("category") or "user").strip() or "user"
    return Scenario(name=str(row["name"]).strip(), m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ldc, dtype=dtype,
                    category=category)


def suite_row(s: Scenario) -> list:
    return [s.name, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.dtype, s.category]


def _pad8(length: int) -> int:
    return max(8, -(-length // 8) * 8)


def from_flashinfer(definition: dict, axes: dict, read_tensor) -> list[dict]:
    """Suite rows for one FlashInfer-Bench GEMM workload (axes M, N, K all bound). Its layout is not ours
    (FlashInfer's B is N x K, or K x N column-major): the shape and the work are, with row strides padded to
    16 bytes as in every timed suite."""
    m, n, k = (int(axes[a]) for a in ("M", "N", "K"))
    return [{"name": f"fi_{definition['name']}_m{m}", "m": m, "n": n, "k": k, "lda": _pad8(k), "ldb": _pad8(n),
             "ldc": _pad8(n), "dtype": "bf16", "category": "serving"}]


def to_flashinfer(s: Scenario) -> dict:
    """The FlashInfer-Bench definition name, axes and inputs this shape is an instance of."""
    return {"definition": f"gemm_n{s.n}_k{s.k}", "axes": {"M": s.m},
            "inputs": {"A": {"type": "random"}, "B": {"type": "random"}},
            "note": "workbench gemm_bf16: C = A.B with B row-major K x N (FlashInfer's gemm takes B as N x K): the "
                    "same shape and work, another layout of B"}
