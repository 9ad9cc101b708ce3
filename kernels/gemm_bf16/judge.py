"""The bf16 GEMM's judge interface, the part with torch: the buffers of one shape, the fp32 reference, the errors and
their bounds, and the call of a built library. The harness loads it by path (workbench/harness/problems.py) and runs
attention's verification sequence with it (workbench/harness/verify.py); kernels/attn_fwd/judge.py lists the names.

Buffers (README.md "Entry point", "How a kernel is judged"): A is m x lda and B k x ldb elements, their row padding
a NaN no arithmetic makes (`padding_nan_bits`: a kernel that reads it as data gets NaN); C is m x ldc elements inside
`guard` guard elements on each side, the m x n matrix a strided view: the poison goes on the view only, the guard
pattern stays on the margins and on C's row padding. The reference is fp32 (TF32 off) `A[rows] . B`, every column.
"""
from __future__ import annotations

import ctypes
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch

from workbench.harness.reference import BF16_POISON_BITS, GUARD_BF16_BITS
from workbench.harness.verify import Errors, Failure
from workbench.harness.verify import Tolerances as _AttentionTolerances

from .anchors import load_anchors  # noqa: F401  (the interface)
from .problem import Scenario

ENTRY = "gemm_bf16"
_VERIFY = tomllib.loads((Path(__file__).resolve().parent / "problem.toml").read_text())["verify"]
PADDING_NAN_BITS = int(_VERIFY["padding_nan_bits"])
WARM_UP = Scenario(name="warm_up", m=128, n=128, k=128, lda=128, ldb=128, ldc=128)
_ARGTYPES = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [ctypes.c_void_p]


@dataclass
class Tolerances(_AttentionTolerances):
    """problem.toml [verify]: attention's fields the harness reads, plus the K-dependent slack of the bounds."""
    sqrt_k_slack: float = 1.0e-6
    full_reference_max_mnk: int = 4_294_967_296
    padding_nan_bits: int = PADDING_NAN_BITS


def bounds(tol: Tolerances, s: Scenario) -> tuple[float, float]:
    """(rel L2 bound, max abs bound): the bf16 rounding floor's bounds, plus fp32 accumulation's sqrt(K) growth."""
    extra = tol.sqrt_k_slack * math.sqrt(s.k)
    return tol.rel_l2_tol + extra, tol.max_abs_tol + extra


class Inputs:
    """A and B as strided views of their buffers (fixed pointers; fill() writes new contents behind them)."""

    def __init__(self, s: Scenario, a_buf: torch.Tensor, b_buf: torch.Tensor):
        self.s, self.a_buf, self.b_buf = s, a_buf, b_buf
        self.a = a_buf.as_strided((s.m, s.k), (s.lda, 1))
        self.b = b_buf.as_strided((s.k, s.n), (s.ldb, 1))

    @classmethod
    def allocate(cls, s: Scenario, device: str) -> "Inputs":
        bufs = [torch.empty(rows * stride, dtype=torch.bfloat16, device=device)
                for rows, stride in ((s.m, s.lda), (s.k, s.ldb))]
        for buf in bufs:
            buf.view(torch.int16).fill_(PADDING_NAN_BITS)     # a positive NaN: below 0x8000, an int16 as it is
        return cls(s, *bufs)

    def fill(self, seed: int, scale: float = 1.0) -> None:
        """N(0, 1) into the views; scale is a power of two, so bf16 stays exact. The padding keeps its NaN."""
        gen = torch.Generator(device=self.a_buf.device).manual_seed(seed)
        for t in (self.a, self.b):
            if t.numel():
                t.normal_(0.0, 1.0, generator=gen)
                if scale != 1.0:
                    t.mul_(scale)

    def clone(self) -> "Inputs":
        return Inputs(self.s, self.a_buf.clone(), self.b_buf.clone())

    def equal(self, other: "Inputs") -> list[str]:
        """Names of the buffers (padding included) whose bits differ from other's."""
        return [name for name, mine, theirs in (("A", self.a_buf, other.a_buf), ("B", self.b_buf, other.b_buf))
                if not torch.equal(mine.view(torch.int16), theirs.view(torch.int16))]


class Outputs:
    """C as a strided view into a buffer whose margins and row padding hold the guard pattern."""
    names = ("C",)
    label = "C"

    def __init__(self, s: Scenario, device: str, guard: int):
        self.s, self.guard = s, guard
        self._c = torch.empty(s.m * s.ldc + 2 * guard, dtype=torch.bfloat16, device=device)
        self._c.view(torch.int16).fill_(GUARD_BF16_BITS)
        self.c = self._c[guard:].as_strided((s.m, s.n), (s.ldc, 1))

    @property
    def tensors(self) -> tuple:
        return (self.c,)

    def poison(self) -> None:
        self.c.view(torch.int16).fill_(BF16_POISON_BITS)

    def guards_intact(self) -> list[str]:
        s, g, c16 = self.s, self.guard, self._c.view(torch.int16)
        if not (bool((c16[:g] == GUARD_BF16_BITS).all()) and bool((c16[g + s.m * s.ldc:] == GUARD_BF16_BITS).all())):
            return ["C"]
        if s.ldc > s.n and s.m > 0:      # C's row padding is not C: it keeps the guard pattern
            padding = c16[g:g + s.m * s.ldc].view(s.m, s.ldc)[:, s.n:]
            if not bool((padding == GUARD_BF16_BITS).all()):
                return ["C, into its row padding"]
        return []

    def unwritten(self) -> str:
        left = int((self.c.view(torch.int16) == BF16_POISON_BITS).sum())
        return f"{left} of {self.c.numel()} C elements never written" if left else ""

    def nonfinite(self, scale_note: str = "") -> str:
        bad = int((~torch.isfinite(self.c)).sum())
        return f"{bad} C elements are NaN/Inf{scale_note}" if bad else ""


@dataclass
class Reference:
    rows: torch.Tensor    # [R] rows of C
    c: torch.Tensor       # [R, n] fp32

    @property
    def primary(self) -> torch.Tensor:
        return self.c

    def head(self, n: int) -> "Reference":
        return Reference(rows=self.rows[:n], c=self.c[:n])

    def to_cache(self) -> dict:
        return {"rows": self.rows.cpu(), "c": self.c.to(torch.bfloat16).cpu()}

    @classmethod
    def from_cache(cls, data: dict, device: str) -> "Reference":
        return cls(rows=data["rows"].to(device), c=data["c"].to(device).float())


def sample_rows(s: Scenario, tol: Tolerances, count: int, gen: torch.Generator,
                everything_when_small: bool = False) -> torch.Tensor:
    """Rows of C to compare: all of them on small problems; else the first two, the last two, both sides of the
    64-, 128- and 256-row tile edges, and random rows (the generator decides which)."""
    full_max = tol.full_reference_max_mnk if everything_when_small else 0
    if s.m * s.n * s.k <= full_max or s.m <= count:
        return torch.arange(s.m)
    picks = {0, 1, s.m - 1, s.m - 2} | {r for e in (64, 128, 256) for r in (e - 1, e) if r < s.m}
    rand = torch.randperm(s.m, generator=gen)[: max(0, count - len(picks))].tolist()
    return torch.tensor(sorted(picks.union(rand)))[:count]


def reference(s: Scenario, inputs: Inputs, rows: torch.Tensor) -> Reference:
    """fp32 A[rows] . B with TF32 off (zeros when K = 0)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    device = inputs.a_buf.device
    rows = rows.to(device)
    if s.k == 0 or s.n == 0:
        return Reference(rows=rows, c=torch.zeros(len(rows), s.n, device=device))
    return Reference(rows=rows, c=inputs.a[rows].float() @ inputs.b.float())


def reference_from_output(tensors: tuple, rows: torch.Tensor) -> Reference:
    c = tensors[0]
    rows = rows.to(c.device)
    return Reference(rows=rows, c=c[rows].float())


def take_rows(tensors: tuple, rows: torch.Tensor) -> tuple:
    return (tensors[0][rows].clone(),)


OUTPUT_ROW_DIMS = (0,)       # a row of C


def output_rows(s: Scenario) -> int:
    return s.m


def timed_fixed_rows(s: Scenario, count: int) -> list[int]:
    """The rows every timed launch checks (sample_rows' fixed picks): all of them when C has no more than `count`."""
    if s.m <= count:
        return list(range(s.m))
    return sorted({0, 1, s.m - 1, s.m - 2} | {r for e in (64, 128, 256) for r in (e - 1, e) if r < s.m})[:count]


def _rel_and_max(got: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """(rel L2, max |err| / max |ref|); absolute where ref is all zeros; inf for NaN."""
    diff = got.float() - ref
    ref_norm = float(ref.norm())
    ref_max = float(ref.abs().max()) if ref.numel() else 0.0
    rel = float(diff.norm()) / ref_norm if ref_norm > 0 else float(diff.norm())
    mx = float(diff.abs().max()) if diff.numel() else 0.0
    mx = mx / ref_max if ref_max > 0 else mx
    return (float("inf"), float("inf")) if math.isnan(rel) or math.isnan(mx) else (rel, mx)


def errors(tensors: tuple, ref: Reference, s: Scenario) -> Errors:
    rel, mx = _rel_and_max(tensors[0][ref.rows], ref.c)
    return Errors(rel, mx, 0.0)        # one output: no lse, `lse_mismatch` never applies


def check_close(errs: Errors, tol: Tolerances, s: Scenario, what: str) -> None:
    rel_tol, max_tol = bounds(tol, s)
    if errs.rel_l2 > rel_tol or errs.max_abs > max_tol:
        raise Failure("mismatch", f"{what}: rel L2 {errs.rel_l2:.2e} (tol {rel_tol:.1e}), max {errs.max_abs:.2e} "
                                  f"of max|ref| (tol {max_tol:.1e})")


def anchor_error(outputs: tuple, ref: Reference) -> float:
    return _rel_and_max(outputs[0][ref.rows], ref.c)[0]


class GemmLib:
    """A built library's `gemm_bf16`, called on the current torch stream with the buffers' pointers."""

    def __init__(self, so_path: str):
        self.so_path = so_path
        self.lib = ctypes.CDLL(so_path, mode=ctypes.RTLD_LOCAL)
        self.fn = self.lib.gemm_bf16
        self.fn.argtypes = _ARGTYPES
        self.fn.restype = ctypes.c_int

    def __call__(self, inputs: Inputs, c: torch.Tensor, s: Scenario) -> int:
        stream = torch.cuda.current_stream().cuda_stream
        return int(self.fn(inputs.a_buf.data_ptr(), inputs.b_buf.data_ptr(), c.data_ptr(), s.m, s.n, s.k, s.lda,
                           s.ldb, s.ldc, stream))


def open_library(so_path: str) -> GemmLib:
    return GemmLib(so_path)
