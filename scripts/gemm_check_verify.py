"""Verification of one GEMM kernel on one shape, the harness's way: every way to be wrong has attention's reason name.

Used by scripts/gemm_gpu_check.py's worker processes (torch + ctypes; no workbench import). The sequence, on one
set of buffers per shape (fixed pointers, new contents each step), follows workbench/harness/verify.py:
  for each seed (problem.toml's fixed seeds + one fresh): fill A, B -> poison C -> call -> copy C on the stream
      -> device sync -> the copy equals C (`stream`), guards and C's row padding intact (`out_of_bounds`), A and B
      unchanged (`inputs_modified`), no poison left (`unwritten`), finite (`nonfinite`), close to the fp32
      reference (`mismatch`; matching the previous seed's result instead: `stale`)
  the last seed again, bitwise the same (`nondeterministic`); the inputs x large_scale (`large_scale`)
then one call recorded with torch.profiler on new contents (a kernel that is not the library's own:
`foreign_kernel`) and TIMED_CHECKS more calls on new contents, each output checked (`timed_mismatch`).
"""
from __future__ import annotations

import ctypes
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch

from gemm_gpu_check import kernel_base_name

PROBLEM = Path(__file__).resolve().parents[1] / "kernels" / "gemm_bf16" / "problem.toml"
POISON_BITS, GUARD_BITS = 0x7FA1, 0x5A5A     # as attention's harness: a NaN no arithmetic makes; a finite guard
TIMED_CHECKS = 2


@dataclass(frozen=True)
class Tolerances:
    seeds: tuple
    rel_l2_tol: float
    max_abs_tol: float
    sqrt_k_slack: float
    large_scale: float
    sample_rows: int
    full_reference_max_mnk: int
    guard_elems: int
    padding_nan_bits: int
    original_rows: int

    @classmethod
    def load(cls, path: Path = PROBLEM) -> "Tolerances":
        v = tomllib.loads(path.read_text())["verify"]
        return cls(tuple(v["seeds"]), *(v[f] for f in list(cls.__dataclass_fields__)[1:]))

    def bounds(self, k: int) -> tuple[float, float]:
        extra = self.sqrt_k_slack * math.sqrt(k)
        return self.rel_l2_tol + extra, self.max_abs_tol + extra


class Failure(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class GemmLib:
    """A built library's `gemm_bf16`, called on the current torch stream."""

    def __init__(self, so_path: str):
        self.lib = ctypes.CDLL(so_path, mode=ctypes.RTLD_LOCAL)
        self.fn = self.lib.gemm_bf16
        self.fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 6 + [ctypes.c_void_p]
        self.fn.restype = ctypes.c_int

    def __call__(self, bufs: "Buffers") -> int:
        g = bufs.g
        return int(self.fn(bufs.a_buf.data_ptr(), bufs.b_buf.data_ptr(), bufs.c.data_ptr(), g.m, g.n, g.k, g.lda,
                           g.ldb, g.ldc, torch.cuda.current_stream().cuda_stream))


class Buffers:
    """A (m x lda), B (k x ldb) with NaN row padding, and C (m x ldc) inside guard elements, as strided views."""

    def __init__(self, g, tol: Tolerances, device: str = "cuda"):
        self.g, self.guard, self.device = g, tol.guard_elems, device
        bf16 = torch.bfloat16
        self.a_buf = torch.empty(g.m * g.lda, dtype=bf16, device=device)
        self.b_buf = torch.empty(g.k * g.ldb, dtype=bf16, device=device)
        self.c_buf = torch.empty(g.m * g.ldc + 2 * self.guard, dtype=bf16, device=device)
        self.a_buf.view(torch.int16).fill_(tol.padding_nan_bits)
        self.b_buf.view(torch.int16).fill_(tol.padding_nan_bits)
        self.c_buf.view(torch.int16).fill_(GUARD_BITS)
        self.a = self.a_buf.as_strided((g.m, g.k), (g.lda, 1))
        self.b = self.b_buf.as_strided((g.k, g.n), (g.ldb, 1))
        self.c = self.c_buf[self.guard:].as_strided((g.m, g.n), (g.ldc, 1))

    def fill(self, seed: int, scale: float = 1.0) -> None:
        """New N(0, 1) contents behind the same pointers; scale is a power of two (exact in bf16)."""
        gen = torch.Generator(device=self.device).manual_seed(seed)
        for t in (self.a, self.b):
            if t.numel():
                t.copy_(torch.randn(t.shape, generator=gen, device=self.device, dtype=torch.float32).mul_(scale))

    def poison(self) -> None:
        self.c.view(torch.int16).fill_(POISON_BITS)

    def guards_intact(self) -> bool:
        g, c16, n = self.g, self.c_buf.view(torch.int16), self.guard
        ok = bool((c16[:n] == GUARD_BITS).all()) and bool((c16[n + g.m * g.ldc:] == GUARD_BITS).all())
        if ok and g.ldc > g.n and g.m > 0:   # C's row padding is not C: it must keep the guard pattern
            ok = bool((c16[n:n + g.m * g.ldc].view(g.m, g.ldc)[:, g.n:] == GUARD_BITS).all())
        return ok


def sample_rows(g, tol: Tolerances, gen: torch.Generator, count: int = 0) -> torch.Tensor:
    """Rows of C to compare: all of them on small problems; else the first two, the last two, both sides of the
    64- and 128-row tile edges, and random rows (the generator decides which)."""
    count = count or tol.sample_rows
    if g.m * g.n * g.k <= tol.full_reference_max_mnk or g.m <= count:
        return torch.arange(g.m)
    picks = {0, 1, g.m - 1, g.m - 2} | {r for e in (64, 128, 256) for r in (e - 1, e) if r < g.m}
    rand = torch.randperm(g.m, generator=gen)[: max(0, count - len(picks))].tolist()
    return torch.tensor(sorted(picks.union(rand)))


def reference(bufs: Buffers, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows on the GPU, fp32 A[rows] . B with TF32 off)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = rows.to(bufs.device)
    if bufs.g.k == 0:
        return rows, torch.zeros(len(rows), bufs.g.n, device=bufs.device)
    return rows, bufs.a[rows].float() @ bufs.b.float()


def errors(out_rows: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """(rel L2, max |err| / max |ref|); absolute where ref is all zeros; inf for NaN."""
    diff = out_rows.float() - ref
    ref_norm, ref_max = float(ref.norm()), float(ref.abs().max()) if ref.numel() else 0.0
    rel = float(diff.norm()) / ref_norm if ref_norm > 0 else float(diff.norm())
    mx = float(diff.abs().max()) if diff.numel() else 0.0
    mx = mx / ref_max if ref_max > 0 else mx
    return (float("inf"), float("inf")) if math.isnan(rel) or math.isnan(mx) else (rel, mx)


class Verifier:
    """The sequence above for one kernel on one shape; `worst` keeps the largest errors seen."""

    def __init__(self, g, tol: Tolerances, fresh_seed: int, device: str = "cuda"):
        self.g, self.tol, self.fresh_seed = g, tol, fresh_seed
        self.bufs = Buffers(g, tol, device)
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        self.worst = (0.0, 0.0)

    def rows_for(self, seed: int) -> torch.Tensor:
        return sample_rows(self.g, self.tol, torch.Generator().manual_seed(seed))

    def launch(self, kernel, seed: int, scale: float = 1.0) -> None:
        b = self.bufs
        b.fill(seed, scale)
        pristine = (b.a_buf.clone(), b.b_buf.clone())
        b.poison()
        self.sync()
        rc = kernel(b)
        if rc:
            raise Failure("unsupported", f"gemm_bf16 returned error code {rc}")
        snap = b.c.clone()
        self.sync()
        if not torch.equal(snap.view(torch.int16), b.c.view(torch.int16)):
            raise Failure("stream", "C changed after the stream passed to gemm_bf16 had finished")
        if not b.guards_intact():
            raise Failure("out_of_bounds", "wrote outside C (guard elements or C's row padding changed)")
        changed = [n for n, (now, before) in zip("AB", ((b.a_buf, pristine[0]), (b.b_buf, pristine[1])))
                   if not torch.equal(now.view(torch.int16), before.view(torch.int16))]
        if changed:
            raise Failure("inputs_modified", f"{' and '.join(changed)} changed during the call")

    def check_output(self, rows: torch.Tensor, ref: torch.Tensor, what: str, scale_note: str = "") -> tuple:
        c = self.bufs.c
        left = int((c.view(torch.int16) == POISON_BITS).sum())
        if left:
            raise Failure("unwritten", f"{what}: {left} of {c.numel()} C elements never written")
        bad = int((~torch.isfinite(c)).sum())
        if bad:
            raise Failure("nonfinite", f"{what}: {bad} C elements are NaN/Inf{scale_note}")
        errs = errors(c[rows], ref)
        rel_tol, max_tol = self.tol.bounds(self.g.k)
        if errs[0] > rel_tol or errs[1] > max_tol:
            raise Failure("mismatch", f"{what}: rel L2 {errs[0]:.2e} (tol {rel_tol:.1e}), max {errs[1]:.2e} of "
                                      f"max|ref| (tol {max_tol:.1e})")
        self.worst = (max(self.worst[0], errs[0]), max(self.worst[1], errs[1]))
        return errs

    def run(self, kernel) -> None:
        """Raises Failure with the first reason found; returns when the kernel passes."""
        if self.g.m == 0 or self.g.n == 0:   # nothing to compute: the call must succeed and touch nothing
            self.launch(kernel, self.fresh_seed)
            return
        previous = None
        seeds = list(self.tol.seeds) + [self.fresh_seed]
        for seed in seeds:
            self.bufs.fill(seed)
            rows, ref = reference(self.bufs, self.rows_for(seed))
            self.launch(kernel, seed)
            try:
                self.check_output(rows, ref, f"seed {seed}")
            except Failure as err:
                if err.reason == "mismatch" and previous is not None:
                    prev_rel = errors(self.bufs.c[previous[0]], previous[1])[0]
                    if prev_rel <= self.tol.bounds(self.g.k)[0]:
                        raise Failure("stale", f"seed {seed}: C equals the previous inputs' result (rel L2 "
                                               f"{prev_rel:.1e} to it)") from None
                raise
            previous = (rows, ref)
        first = self.bufs.c.clone()
        self.launch(kernel, seeds[-1])
        if not torch.equal(first.view(torch.int16), self.bufs.c.view(torch.int16)):
            n = int((first.view(torch.int16) != self.bufs.c.view(torch.int16)).sum())
            raise Failure("nondeterministic", f"seed {seeds[-1]} twice: {n} C elements differ")
        big = self.tol.large_scale
        self.bufs.fill(self.fresh_seed, big)
        rows, ref = reference(self.bufs, self.rows_for(self.fresh_seed))
        try:
            self.launch(kernel, self.fresh_seed, big)
            self.check_output(rows, ref, f"inputs x{big:g}", f" at input scale x{big:g}")
        except Failure as err:
            if err.reason in ("unwritten", "nonfinite", "mismatch"):
                raise Failure("large_scale", err.detail) from None
            raise

    def later_calls(self, kernel, own_names: set) -> None:
        """The recorded call (foreign kernels) and TIMED_CHECKS checked calls, each on new contents."""
        for index in range(1 + TIMED_CHECKS):
            seed = self.fresh_seed + 7919 * (index + 1)
            self.bufs.fill(seed)
            rows, ref = reference(self.bufs, sample_rows(self.g, self.tol, torch.Generator().manual_seed(seed),
                                                         self.tol.original_rows))
            self.bufs.poison()
            self.sync()
            if index == 0 and self.bufs.device.startswith("cuda"):   # the profiler's CUDA activity
                seen = recorded_kernels(lambda: kernel(self.bufs))
                foreign = sorted({name for name in seen if kernel_base_name(name) not in own_names})
                if foreign:
                    raise Failure("foreign_kernel", f"ran {len(foreign)} kernel(s) not in its library: "
                                                    f"{'; '.join(n[:80] for n in foreign[:3])}")
            elif kernel(self.bufs):
                raise Failure("timed_mismatch", "a later call returned an error code")
            self.sync()
            try:
                self.check_output(rows, ref, f"call {6 + index} (new inputs, verification passed)")
            except Failure as err:
                raise Failure("timed_mismatch", err.detail) from None


NOT_KERNELS = re.compile(r"^(Memcpy|Memset|Event Sync|Stream Sync|Context Sync|Stream Wait Event)")   # as foreign.py


def recorded_kernels(call) -> list[str]:
    """Names of the device kernels that ran during call() (copies, sets, sync records and annotations left out),
    read from the profile the way workbench/harness/activity.py reads it."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        rc = call()
        torch.cuda.synchronize()
    if rc:
        raise Failure("unsupported", f"gemm_bf16 returned error code {rc} in the recorded call")
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:
        events = [(e.name(), e.is_user_annotation()) for e in results.events() if e.device_type() == DeviceType.CUDA]
    else:
        events = [(e.name, False) for e in prof.events() if e.device_type == DeviceType.CUDA]
    return [name for name, annotation in events if not annotation and not NOT_KERNELS.match(name)]
