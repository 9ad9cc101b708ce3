"""Verification of one kernel on one scenario: every way a kernel can be wrong or cheat gets its own reason.

A kernel is any callable `kernel(inputs, o, lse, scenario) -> int` that enqueues its work on the current
stream and returns 0 or an error code: the ctypes wrapper of a built .cu on a GPU, or a Python stand-in on the
CPU (tests/ uses stand-ins with each failure mode of kernels/attn_fwd/wrong/, so CI proves every rejection).

The sequence, all on one set of input buffers (fixed pointers, new contents each step):
  for each seed (fixed seeds + one fresh):  fill inputs -> poison o/lse -> launch -> snapshot on the stream
      -> device sync -> guards, inputs unchanged, poison gone, finite, close to the fp32 reference
      (a miss that matches the previous seed's result is `stale`), and on the first seed close to the original
  the last seed once more -> bitwise identical (`nondeterministic` otherwise)
  the inputs x16 -> still correct (`large_scale`: a missing running max overflows)

The sequence is any problem's: what is attention's here (GuardedOutputs, errors_against, the default judge) is
what kernels/attn_fwd/judge.py hands the harness; another problem's judge.py supplies its own (problems.py).
A kernel is then called as `kernel(inputs, *outputs.tensors, scenario)`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from workbench.harness.reference import (BF16_POISON_BITS, GUARD_BF16_BITS, GUARD_F32_BITS, LSE_POISON_BITS,
                                         Inputs, Reference, reference, sample_rows, softmax_scale)
from workbench.harness.scenarios import Scenario

REASONS = {
    "unwritten": "output (o or lse) still holds the poison written before the launch",
    "nonfinite": "NaN or Inf in the output at normal input scale",
    "mismatch": "output differs from the fp32 reference beyond tolerance",
    "lse_mismatch": "lse differs from the fp32 reference beyond tolerance",
    "mismatch_original": "output differs from the original kernel's beyond tolerance",
    "large_scale": "wrong or non-finite output when the inputs are scaled x16 (missing running max?)",
    "inputs_modified": "q, k or v changed during the call",
    "stream": "output still changing after the given stream finished: work escaped the stream",
    "stale": "output equals the result for earlier inputs in the same buffers (cached result)",
    "out_of_bounds": "bytes before or after o / lse were overwritten",
    "nondeterministic": "the same inputs twice gave different outputs (race?)",
    "timed_mismatch": "outputs of timed launches are wrong although verification passed",
    "foreign_kernel": "a kernel that is not in the kernel's own library ran during its call (cuBLAS, cuDNN, torch)",
    "unsupported": "the kernel refused the shape (returned an error code)",
    "launch_error": "a CUDA error surfaced after the launch",
    "crash": "the evaluation process died (illegal address, abort)",
    "timeout": "the scenario exceeded its time limit",
}

Kernel = Callable[..., int]     # kernel(inputs, *outputs.tensors, scenario) -> 0 or an error code


@dataclass
class Tolerances:
    rel_l2_tol: float = 1e-2
    max_abs_tol: float = 4e-2
    lse_abs_tol: float = 2e-2
    vs_original_rel_l2_tol: float = 1.2e-2
    large_scale: float = 16.0
    sample_rows: int = 96
    full_reference_max_elems: int = 4_194_304
    guard_elems: int = 65536
    original_rows: int = 16      # rows compared against the original kernel (its output is cached)
    seeds: tuple = (0, 1)

    @classmethod
    def from_problem(cls, verify_section: dict) -> "Tolerances":
        known = {k: v for k, v in verify_section.items() if k in cls.__dataclass_fields__}
        if "seeds" in known:
            known["seeds"] = tuple(known["seeds"])
        return cls(**known)


@dataclass
class Outcome:
    passed: bool
    reason: str = ""
    detail: str = ""
    rel_l2_err: Optional[float] = None
    max_abs_err: Optional[float] = None
    lse_err: Optional[float] = None
    seeds: list = field(default_factory=list)


class Failure(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


# ---- outputs surrounded by guard bytes ----------------------------------------------------------------
class GuardedOutputs:
    """o and lse as views into larger buffers whose margins hold a known pattern."""

    def __init__(self, s: Scenario, device: str, guard: int):
        self.guard = guard
        n_o = s.batch * s.seqlen_q * s.heads_q * s.head_dim
        n_lse = s.batch * s.heads_q * s.seqlen_q
        self._o = torch.empty(n_o + 2 * guard, dtype=torch.bfloat16, device=device)
        self._lse = torch.empty(n_lse + 2 * guard, dtype=torch.float32, device=device)
        self.o = self._o[guard:guard + n_o].view(s.batch, s.seqlen_q, s.heads_q, s.head_dim)
        self.lse = self._lse[guard:guard + n_lse].view(s.batch, s.heads_q, s.seqlen_q)
        self._o.view(torch.int16).fill_(GUARD_BF16_BITS)
        self._lse.view(torch.int32).fill_(GUARD_F32_BITS)

    names = ("o", "lse")
    label = "o/lse"

    @property
    def tensors(self) -> tuple:
        """What the kernel is given after its inputs, in the order of its signature."""
        return self.o, self.lse

    def poison(self) -> None:
        self.o.view(torch.int16).fill_(BF16_POISON_BITS)
        self.lse.view(torch.int32).fill_(LSE_POISON_BITS)

    def unwritten(self) -> str:
        """'' when no poison is left, else which elements were never written."""
        o_left = int((self.o.view(torch.int16) == BF16_POISON_BITS).sum())
        l_left = int((self.lse.view(torch.int32) == LSE_POISON_BITS).sum())
        parts = []
        if o_left:
            parts.append(f"{o_left} of {self.o.numel()} o elements")
        if l_left:
            parts.append(f"{l_left} of {self.lse.numel()} lse elements")
        return " and ".join(parts) + " never written" if parts else ""

    def nonfinite(self, scale_note: str = "") -> str:
        """'' when the output is finite (lse may be -inf: a row that sees no key), else how many are not."""
        bad_o = int((~torch.isfinite(self.o)).sum())
        bad_lse = int(torch.isnan(self.lse).sum() + (self.lse == float("inf")).sum())
        return f"{bad_o} o and {bad_lse} lse elements are NaN/Inf{scale_note}" if bad_o or bad_lse else ""

    def guards_intact(self) -> list[str]:
        g = self.guard
        bad = []
        o16, l32 = self._o.view(torch.int16), self._lse.view(torch.int32)
        if not (bool((o16[:g] == GUARD_BF16_BITS).all()) and bool((o16[-g:] == GUARD_BF16_BITS).all())):
            bad.append("o")
        if not (bool((l32[:g] == GUARD_F32_BITS).all()) and bool((l32[-g:] == GUARD_F32_BITS).all())):
            bad.append("lse")
        return bad


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    else:
        from workbench.harness import cpu_device
        cpu_device.synchronize()


def snapshot_on_stream(t: torch.Tensor) -> torch.Tensor:
    """A copy ordered after the work on the current stream only (not a device-wide sync)."""
    return t.clone()


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    view = torch.int16 if a.dtype == torch.bfloat16 else torch.int32
    return torch.equal(a.view(view), b.view(view))


# ---- comparisons ---------------------------------------------------------------------------------------
@dataclass
class Errors:
    rel_l2: float
    max_abs: float
    lse: float


def errors_against(o: torch.Tensor, lse: torch.Tensor, ref: Reference, s: Scenario) -> Errors:
    got_o = o[:, ref.rows].float()
    got_lse = lse[:, :, ref.rows].float()
    diff = got_o - ref.o
    ref_norm = float(ref.o.norm())
    rel_l2 = float(diff.norm()) / ref_norm if ref_norm > 0 else float(diff.norm())
    ref_max = float(ref.o.abs().max()) if ref.o.numel() else 0.0
    max_abs = float(diff.abs().max()) / ref_max if ref_max > 0 else float(diff.abs().max() if diff.numel() else 0)
    finite = torch.isfinite(ref.lse)
    if bool(finite.any()):
        lse_diff = (got_lse[finite] - ref.lse[finite]).abs() / ref.lse[finite].abs().clamp(min=1.0)
        lse_err = float(lse_diff.max())
    else:
        lse_err = 0.0
    empty = ~finite
    if bool(empty.any()) and not bool((got_lse[empty] == float("-inf")).all()):
        lse_err = float("inf")   # a row that sees no key must report lse = -inf
    if math.isnan(rel_l2) or math.isnan(max_abs):
        rel_l2 = max_abs = float("inf")
    if math.isnan(lse_err):
        lse_err = float("inf")
    return Errors(rel_l2, max_abs, lse_err)


def check_close(errs: Errors, tol: Tolerances, what: str) -> None:
    """Attention's bounds: o within rel L2 and max abs of the fp32 reference, then lse (`lse_mismatch`)."""
    if errs.rel_l2 > tol.rel_l2_tol or errs.max_abs > tol.max_abs_tol:
        raise Failure("mismatch", f"{what}: rel L2 {errs.rel_l2:.2e} (tol {tol.rel_l2_tol:.0e}), "
                                  f"max abs {errs.max_abs:.2e} of max|ref| (tol {tol.max_abs_tol:.0e})")
    if errs.lse > tol.lse_abs_tol:
        raise Failure("lse_mismatch", f"{what}: lse error {errs.lse:.2e} (tol {tol.lse_abs_tol:.0e})")


def default_judge():
    """Attention's judge.py: what every caller that names no problem gets."""
    from workbench.harness import problems

    return problems.load(None).judge


def rows_for_seed(s, tol: Tolerances, seed: int, judge=None) -> torch.Tensor:
    """Sampled query rows depend on the seed: fixed for the fixed seeds (so the original's rows can be cached),
    new with the fresh seed (so no kernel can know in advance which rows are checked)."""
    gen = torch.Generator().manual_seed(seed)
    if judge is None:
        return sample_rows(s, tol.sample_rows, tol.full_reference_max_elems, gen)
    return judge.sample_rows(s, tol, tol.sample_rows, gen, everything_when_small=True)


class Verifier:
    """Runs the verification sequence for one kernel on one scenario and keeps what timing needs later."""
    judge = None      # the problem's judge.py (set by __init__; None reads as attention's)

    def __init__(self, s, device: str, tol: Tolerances, fresh_seed: int, judge=None):
        self.s, self.device, self.tol = s, device, tol
        self.fresh_seed = fresh_seed
        self.judge = judge or default_judge()
        self.inputs = self.judge.Inputs.allocate(s, device)
        self.out = self.judge.Outputs(s, device, tol.guard_elems)
        self.references: dict[int, object] = {}
        self.first_outputs: Optional[tuple] = None    # run(keep_first=True): the outputs on the first fixed seed

    def rows_for(self, seed: int) -> torch.Tensor:
        return rows_for_seed(self.s, self.tol, seed, self.judge)

    def _errors(self, ref) -> Errors:
        return self.judge.errors(self.out.tensors, ref, self.s)

    def _check_written(self) -> None:
        left = self.out.unwritten()
        if left:
            raise Failure("unwritten", left)

    def _check_finite(self, scale_note: str = "") -> None:
        bad = self.out.nonfinite(scale_note)
        if bad:
            raise Failure("nonfinite", bad)

    @property
    def seeds(self) -> list[int]:
        return list(self.tol.seeds) + [self.fresh_seed]

    def reference_for(self, seed: int, scale: float = 1.0):
        key = seed if scale == 1.0 else -seed - 1
        if key not in self.references:
            self.inputs.fill(seed, scale)
            self.references[key] = self.judge.reference(self.s, self.inputs, self.rows_for(seed))
        return self.references[key]

    def launch(self, kernel: Kernel, seed: int, scale: float = 1.0) -> None:
        """Fill inputs, poison, launch, and check the stream contract, the guards and the inputs."""
        self.inputs.fill(seed, scale)
        pristine = self.inputs.clone()
        self.out.poison()
        synchronize(self.device)
        rc = kernel(self.inputs, *self.out.tensors, self.s)
        entry = self.judge.ENTRY
        if rc:
            raise Failure("unsupported", f"{entry} returned error code {rc}")
        snaps = [snapshot_on_stream(t) for t in self.out.tensors]
        synchronize(self.device)
        if not all(_bits_equal(snap, t) for snap, t in zip(snaps, self.out.tensors)):
            raise Failure("stream", f"{self.out.label} changed after the stream passed to {entry} had finished")
        bad_guards = self.out.guards_intact()
        if bad_guards:
            raise Failure("out_of_bounds", f"wrote outside {' and '.join(bad_guards)} (guard bytes changed)")
        changed = self.inputs.equal(pristine)
        if changed:
            raise Failure("inputs_modified", f"{', '.join(changed)} changed during the call")

    def run(self, kernel: Kernel, original: Optional[Reference] = None, keep_first: bool = False) -> Outcome:
        """original: the original kernel's output on the first fixed seed (sampled rows), if known. keep_first: keep
        a copy of the outputs on that seed in `first_outputs`, for a comparison with the original made later
        (`original_mismatch`; the worker makes it after the candidate's timing)."""
        outcome = Outcome(passed=False, seeds=self.seeds)
        worst = None
        try:
            previous = None
            rel_bound = self.judge.bounds(self.tol, self.s)[0]
            for index, seed in enumerate(self.seeds):
                ref = self.reference_for(seed)
                self.launch(kernel, seed)
                self._check_written()
                self._check_finite()
                errs = self._errors(ref)
                if previous is not None and (errs.rel_l2 > rel_bound):
                    prev_errs = self._errors(previous)
                    if prev_errs.rel_l2 <= rel_bound:
                        raise Failure("stale", f"seed {seed}: output matches the previous inputs' result "
                                               f"(rel L2 {prev_errs.rel_l2:.1e} to it, {errs.rel_l2:.1e} to the "
                                               "right one)")
                self.judge.check_close(errs, self.tol, self.s, f"seed {seed}")
                worst = errs if worst is None else Errors(max(worst.rel_l2, errs.rel_l2),
                                                           max(worst.max_abs, errs.max_abs), max(worst.lse, errs.lse))
                if index == 0 and keep_first:
                    self.first_outputs = tuple(snapshot_on_stream(t) for t in self.out.tensors)
                if index == 0 and original is not None:
                    detail = original_mismatch(self.judge, self.tol, self.s, self.out.tensors, original, seed)
                    if detail:
                        raise Failure("mismatch_original", detail)
                previous = ref
            # the same inputs again must give the same bits
            first = [t.clone() for t in self.out.tensors]
            self.launch(kernel, self.seeds[-1])
            if not all(_bits_equal(a, b) for a, b in zip(first, self.out.tensors)):
                n = int((first[0].view(torch.int16) != self.out.tensors[0].view(torch.int16)).sum())
                raise Failure("nondeterministic", f"seed {self.seeds[-1]} twice: {n} {self.out.names[0]} elements "
                                                  "differ")
            # large inputs: exp overflows without a running max
            big = self.tol.large_scale
            ref_big = self.reference_for(self.fresh_seed, big)
            try:
                self.launch(kernel, self.fresh_seed, big)
                self._check_written()
                self._check_finite(f" at input scale x{big:g}")
                self.judge.check_close(self._errors(ref_big), self.tol, self.s, f"inputs x{big:g}")
            except Failure as err:
                if err.reason in ("unwritten", "nonfinite", "mismatch", "lse_mismatch"):
                    raise Failure("large_scale", err.detail) from None
                raise
        except Failure as err:
            outcome.reason, outcome.detail = err.reason, err.detail
        else:
            outcome.passed = True
        if worst is not None:
            outcome.rel_l2_err, outcome.max_abs_err, outcome.lse_err = worst.rel_l2, worst.max_abs, worst.lse
        return outcome


def original_mismatch(judge, tol: Tolerances, s, outputs: tuple, original, seed: int) -> str:
    """'' when `outputs` (a kernel's on the first fixed seed) are within tolerance of the original kernel's rows
    on that seed, else the detail line of `mismatch_original`."""
    vs = judge.errors(tuple(outputs), original, s)
    if vs.rel_l2 > tol.vs_original_rel_l2_tol:
        return f"seed {seed}: rel L2 {vs.rel_l2:.2e} against the original kernel (tol {tol.vs_original_rel_l2_tol:.0e})"
    return ""


def kernel_output_reference(kernel: Kernel, s, device: str, tol: Tolerances, seed: int,
                            rows: torch.Tensor, judge=None):
    """Run a trusted kernel (the original) once on a seed and keep its sampled rows for comparisons."""
    judge = judge or default_judge()
    inputs = judge.Inputs.allocate(s, device)
    inputs.fill(seed)
    out = judge.Outputs(s, device, 0 if tol.guard_elems == 0 else 16)
    out.poison()
    if kernel(inputs, *out.tensors, s):
        return None
    synchronize(device)
    return judge.reference_from_output(out.tensors, rows)


__all__ = ["REASONS", "Tolerances", "Outcome", "Verifier", "GuardedOutputs", "Failure", "errors_against",
           "kernel_output_reference", "original_mismatch", "softmax_scale", "synchronize"]
