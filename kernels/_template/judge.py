"""The NEWPROB problem's judge interface, the part with torch: the buffers of one shape, the fp32 reference, the errors
and their bounds, the call of a built library and the anchor (`workbench new-problem` wrote it from
kernels/_template/; kernels/attn_fwd/judge.py lists what each name is). The operation is y = 2 x: change
`reference` (and standins.correct, original.cu, the torch anchor) to yours; the rest holds for any elementwise op."""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import torch

from workbench.harness.reference import BF16_POISON_BITS, GUARD_BF16_BITS
from workbench.harness.verify import Errors, Failure, Tolerances  # noqa: F401  (Tolerances: the interface)

from .problem import NAME, Scenario

ENTRY = NAME
WARM_UP = Scenario(name="warm_up", n=1024)


def op(x: torch.Tensor) -> torch.Tensor:
    """THE OPERATION, in fp32: the reference, the stand-in and the anchor all use it."""
    return 2.0 * x.float()


class Inputs:
    def __init__(self, x: torch.Tensor):
        self.x = x

    @classmethod
    def allocate(cls, s: Scenario, device: str) -> "Inputs":
        return cls(torch.empty(s.n, dtype=torch.bfloat16, device=device))

    def fill(self, seed: int, scale: float = 1.0) -> None:
        gen = torch.Generator(device=self.x.device).manual_seed(seed)
        self.x.normal_(0.0, 1.0, generator=gen)
        if scale != 1.0:
            self.x.mul_(scale)

    def clone(self) -> "Inputs":
        return Inputs(self.x.clone())

    def equal(self, other: "Inputs") -> list[str]:
        return [] if torch.equal(self.x.view(torch.int16), other.x.view(torch.int16)) else ["x"]


class Outputs:
    names = ("y",)
    label = "y"

    def __init__(self, s: Scenario, device: str, guard: int):
        self.guard = guard
        self._y = torch.empty(s.n + 2 * guard, dtype=torch.bfloat16, device=device)
        self._y.view(torch.int16).fill_(GUARD_BF16_BITS)
        self.y = self._y[guard:guard + s.n]

    @property
    def tensors(self) -> tuple:
        return (self.y,)

    def poison(self) -> None:
        self.y.view(torch.int16).fill_(BF16_POISON_BITS)

    def guards_intact(self) -> list[str]:
        g, y16 = self.guard, self._y.view(torch.int16)
        ok = bool((y16[:g] == GUARD_BF16_BITS).all()) and bool((y16[g + self.y.numel():] == GUARD_BF16_BITS).all())
        return [] if ok else ["y"]

    def unwritten(self) -> str:
        left = int((self.y.view(torch.int16) == BF16_POISON_BITS).sum())
        return f"{left} of {self.y.numel()} y elements never written" if left else ""

    def nonfinite(self, scale_note: str = "") -> str:
        bad = int((~torch.isfinite(self.y)).sum())
        return f"{bad} y elements are NaN/Inf{scale_note}" if bad else ""


@dataclass
class Reference:
    rows: torch.Tensor     # element indices
    y: torch.Tensor        # fp32

    @property
    def primary(self) -> torch.Tensor:
        return self.y

    def head(self, n: int) -> "Reference":
        return Reference(rows=self.rows[:n], y=self.y[:n])

    def to_cache(self) -> dict:
        return {"rows": self.rows.cpu(), "y": self.y.to(torch.bfloat16).cpu()}

    @classmethod
    def from_cache(cls, data: dict, device: str) -> "Reference":
        return cls(rows=data["rows"].to(device), y=data["y"].to(device).float())


def sample_rows(s: Scenario, tol: Tolerances, count: int, gen: torch.Generator,
                everything_when_small: bool = False) -> torch.Tensor:
    """Every element of small vectors; else the first and last two and random ones."""
    full_max = tol.full_reference_max_elems if everything_when_small else 0
    if s.n <= full_max or s.n <= count:
        return torch.arange(s.n)
    picks = {0, 1, s.n - 2, s.n - 1}
    rand = torch.randperm(s.n, generator=gen)[: max(0, count - len(picks))].tolist()
    return torch.tensor(sorted(picks.union(rand)))[:count]


def reference(s: Scenario, inputs: Inputs, rows: torch.Tensor) -> Reference:
    rows = rows.to(inputs.x.device)
    return Reference(rows=rows, y=op(inputs.x[rows]))


def reference_from_output(tensors: tuple, rows: torch.Tensor) -> Reference:
    rows = rows.to(tensors[0].device)
    return Reference(rows=rows, y=tensors[0][rows].float())


def take_rows(tensors: tuple, rows: torch.Tensor) -> tuple:
    return (tensors[0][rows].clone(),)


OUTPUT_ROW_DIMS = (0,)       # an element of y


def output_rows(s: Scenario) -> int:
    return s.n


def timed_fixed_rows(s: Scenario, count: int) -> list[int]:
    """The elements every timed launch checks: all of them when y has no more than `count`."""
    return list(range(s.n)) if s.n <= count else sorted({0, 1, s.n - 2, s.n - 1})


def _rel_and_max(got: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    diff = got.float() - ref
    norm, top = float(ref.norm()), (float(ref.abs().max()) if ref.numel() else 0.0)
    rel = float(diff.norm()) / norm if norm > 0 else float(diff.norm())
    mx = float(diff.abs().max()) if diff.numel() else 0.0
    mx = mx / top if top > 0 else mx
    return (float("inf"), float("inf")) if math.isnan(rel) or math.isnan(mx) else (rel, mx)


def errors(tensors: tuple, ref: Reference, s: Scenario) -> Errors:
    return Errors(*_rel_and_max(tensors[0][ref.rows], ref.y), 0.0)


def bounds(tol: Tolerances, s: Scenario) -> tuple[float, float]:
    return tol.rel_l2_tol, tol.max_abs_tol


def check_close(errs: Errors, tol: Tolerances, s: Scenario, what: str) -> None:
    rel_tol, max_tol = bounds(tol, s)
    if errs.rel_l2 > rel_tol or errs.max_abs > max_tol:
        raise Failure("mismatch", f"{what}: rel L2 {errs.rel_l2:.2e} (tol {rel_tol:.1e}), max {errs.max_abs:.2e} "
                                  f"of max|ref| (tol {max_tol:.1e})")


def anchor_error(outputs: tuple, ref: Reference) -> float:
    return _rel_and_max(outputs[0][ref.rows], ref.y)[0]


class Library:
    def __init__(self, so_path: str):
        self.lib = ctypes.CDLL(so_path, mode=ctypes.RTLD_LOCAL)
        self.fn = getattr(self.lib, ENTRY)
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        self.fn.restype = ctypes.c_int

    def __call__(self, inputs: Inputs, y: torch.Tensor, s: Scenario) -> int:
        return int(self.fn(inputs.x.data_ptr(), y.data_ptr(), s.n, torch.cuda.current_stream().cuda_stream))


def open_library(so_path: str) -> Library:
    return Library(so_path)


def load_anchors(names) -> tuple[dict, dict, dict]:
    """The torch anchor: the operation itself, on the same inputs."""
    anchors, versions, missing = {}, {}, {}
    for name in names:
        if name == "torch":
            anchors[name], versions[name] = (lambda x, s: (op(x.x).to(torch.bfloat16),)), f"torch {torch.__version__}"
        else:
            missing[name] = "unknown anchor (choose from torch)"
    return anchors, versions, missing
