"""Attention forward's judge interface, the part with torch: what the harness allocates, fills, calls, compares
and times for one scenario. The harness loads this module by path (workbench/harness/problems.py); attention's
code lives in the harness (reference.py, verify.py, anchors.py, kernel_lib.py) and is named here.

What a problem's judge.py defines (kernels/gemm_bf16/judge.py is a second example):
    ENTRY               the exported C function's name (problem.toml [problem] entry_point)
    Tolerances          a dataclass with from_problem(toml [verify]); the harness reads seeds, guard_elems,
                        sample_rows, original_rows, large_scale and vs_original_rel_l2_tol from it
    Inputs              allocate(s, device), fill(seed, scale) (new contents, same pointers), clone(), equal(other)
                        -> names of the buffers whose bits differ
    Outputs             (s, device, guard): tensors (passed to the kernel after the inputs), names, label,
                        poison(), guards_intact() -> names, unwritten() -> '' or a line, nonfinite(note) -> same
    Reference           rows, primary, head(n), to_cache(), from_cache(data, device)
    sample_rows(s, tol, count, gen, everything_when_small=False) -> the output rows to compare
    reference(s, inputs, rows) -> Reference        the fp32 truth on those rows
    reference_from_output(tensors, rows) -> Reference   a trusted kernel's output as a Reference
    take_rows(tensors, rows) -> tuple              copies of those rows of an output (checked later)
    OUTPUT_ROW_DIMS, output_rows(s), timed_fixed_rows(s, count)   the row dimension of each output, the
                        number of rows, the rows every timed launch checks (timed_rows.py)
    errors(tensors, ref, s) -> verify.Errors       rel L2, max abs (and lse, or 0) on ref.rows
    bounds(tol, s) -> (rel L2 bound, max abs bound);  check_close(errs, tol, s, what) raises verify.Failure
    anchor_error(outputs, ref) -> float            an anchor's rel L2 error on ref.rows
    open_library(so_path) -> kernel                the built .so as kernel(inputs, *tensors, s) -> int
    load_anchors(names) -> (anchors, versions, missing)   anchor(inputs, s) -> its output tensors
    WARM_UP             a small Scenario every anchor accepts (loads lazy libraries before the sandbox)
"""
from __future__ import annotations

import torch

from workbench.harness import reference as _reference
from workbench.harness.anchors import load_anchors  # noqa: F401  (the interface)
from workbench.harness.kernel_lib import CudaKernel
from workbench.harness.reference import Inputs, Reference  # noqa: F401
from workbench.harness.scenarios import Scenario
from workbench.harness.timed_rows import fixed_rows as timed_fixed_rows  # noqa: F401
from workbench.harness.verify import GuardedOutputs, Tolerances, check_close as _check_close, errors_against

ENTRY = "attn_fwd"
Outputs = GuardedOutputs
WARM_UP = Scenario(name="warm_up", batch=1, heads_q=2, heads_kv=2, seqlen_q=128, seqlen_k=128, head_dim=128,
                   causal=True)
__all__ = ["ENTRY", "Tolerances", "Inputs", "Outputs", "Reference", "WARM_UP", "load_anchors"]


def sample_rows(s: Scenario, tol: Tolerances, count: int, gen: torch.Generator,
                everything_when_small: bool = False) -> torch.Tensor:
    full_max = tol.full_reference_max_elems if everything_when_small else 0
    return _reference.sample_rows(s, count, full_max, gen)


def reference(s: Scenario, inputs: Inputs, rows: torch.Tensor) -> Reference:
    return _reference.reference(s, inputs, rows)


def reference_from_output(tensors: tuple, rows: torch.Tensor) -> Reference:
    return _reference.reference_from_output(*tensors, rows)


def take_rows(tensors: tuple, rows: torch.Tensor) -> tuple:
    o, lse = tensors
    return o[:, rows].clone(), lse[:, :, rows].clone()


OUTPUT_ROW_DIMS = (1, 2)     # o [B, Sq, H, D] and lse [B, H, Sq]: a row is a query position


def output_rows(s: Scenario) -> int:
    return s.seqlen_q


def errors(tensors: tuple, ref: Reference, s: Scenario):
    return errors_against(*tensors, ref, s)


def bounds(tol: Tolerances, s: Scenario) -> tuple[float, float]:
    return tol.rel_l2_tol, tol.max_abs_tol


def check_close(errs, tol: Tolerances, s: Scenario, what: str) -> None:
    _check_close(errs, tol, what)


def anchor_error(outputs: tuple, ref: Reference) -> float:
    diff = outputs[0][:, ref.rows].float() - ref.o
    return float(diff.norm() / ref.o.norm()) if float(ref.o.norm()) > 0 else float(diff.norm())


def open_library(so_path: str) -> CudaKernel:
    return CudaKernel(so_path)
