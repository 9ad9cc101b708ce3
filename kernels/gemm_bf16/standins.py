"""The bf16 GEMM's CPU stand-ins: Python versions of the correct kernel and of every failure in wrong/, so CI proves
each rejection without a GPU (`workbench check standin:NAME --problem gemm_bf16`). Attention's twin is
workbench/harness/standins.py; the calling convention is the harness's, `kernel(inputs, c, scenario) -> int`.

Each stand-in is one "library" whose kernel is KERNELS[0] (mangled, as a cubin holds it); writing C reports it to
cpu_device demangled, as the profiler names it, so the worker's foreign-kernel check sees a stand-in's activity the
way it sees a GPU's. EXPECTED_REASON pairs each with the reason wrong/expected.csv gives its .cu twin.
"""
from __future__ import annotations

import os
import time

import torch

from workbench.harness import cpu_device

KERNELS = ["_ZN7standin4gemmILi64EEEvPKf"]            # void standin::gemm<64>(float const*)
OWN_KERNEL = "void standin::gemm<64>(float const*)"
CUBLAS_GEMM = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN"   # a kernel name torch.profiler shows for a bf16 GEMM
TILE, K_STEP = 64, 16


def _product(x, s, k=None, chunk=0, b=None):
    """fp32 A . B over the first k columns of A; chunk > 0 rounds the running sum to bf16 every `chunk` products."""
    a, b = x.a.float(), (x.b if b is None else b).float()
    k = s.k if k is None else k
    if not chunk:
        return a[:, :k] @ b[:k]
    acc = torch.zeros(s.m, s.n, dtype=torch.bfloat16)
    for k0 in range(0, k, chunk):
        acc = (acc.float() + a[:, k0:k0 + chunk] @ b[k0:k0 + chunk]).bfloat16()
    return acc.float()


def _store(c, value, report: bool = True) -> int:
    if report and c.numel():
        cpu_device.report(OWN_KERNEL)
    c.copy_(value.to(torch.bfloat16))
    return 0


def correct(x, c, s):
    return _store(c, _product(x, s))


def wrong_tail(x, c, s):
    """The K loop over whole 16-wide steps only: the last K % 16 products of every element are dropped."""
    return _store(c, _product(x, s, s.k - s.k % K_STEP))


def skip_edge_tiles(x, c, s):
    """Only the full 64 x 64 tiles of C are written; no full tile at all is an empty grid, which fails to launch."""
    full_m, full_n = s.m // TILE * TILE, s.n // TILE * TILE
    if not (full_m and full_n):
        return 9                                       # cudaErrorInvalidConfiguration
    cpu_device.report(OWN_KERNEL)
    c[:full_m, :full_n].copy_(_product(x, s)[:full_m, :full_n].bfloat16())
    return 0


def transposed_operand(x, c, s):
    """B read as N x K (B[n * ldb + k]); reads stay inside B's buffer, some land in its NaN padding."""
    flat = x.b_buf
    index = torch.arange(s.n)[:, None] * s.ldb + torch.arange(s.k)[None, :]
    bt = torch.where(index < flat.numel(), flat[index.clamp(max=max(0, flat.numel() - 1))].float(),
                     torch.zeros(()))
    return _store(c, x.a.float() @ bt.T if s.k else torch.zeros(s.m, s.n))


def bf16_accumulate(x, c, s):
    """The running sum rounded to bf16 after every product: its error grows like sqrt(K)."""
    return _store(c, _product(x, s, chunk=1))


def missing_barrier(x, c, s):
    """The consumers read each 16-wide K tile from shared memory before the loader has stored it: every tile's
    products use the tile before it (the first one the zeros it was cleared with), wrong/missing_barrier.cu's
    deterministic outcome."""
    a, b = x.a.float(), x.b.float()
    acc = torch.zeros(s.m, s.n)
    for k0 in range(K_STEP, s.k, K_STEP):            # tile t gets tile t - 1's contents; tile 0 reads zeros
        acc += a[:, k0 - K_STEP:k0] @ b[k0 - K_STEP:k0]
    return _store(c, acc)


def writes_past_end(x, c, s):
    """Off-by-one store guard (row > M): row M, just past C, is stored (zeros) when M is not a multiple of 64."""
    _store(c, _product(x, s))
    if s.m % TILE and s.n:
        torch.as_strided(c, (s.n,), (1,), c.storage_offset() + s.m * s.ldc).zero_()
    return 0


def wrong_stride(x, c, s):
    """Steps through B by N instead of ldb: right when ldb == N, shifted rows and NaN padding when B is padded."""
    b = x.b_buf.as_strided((s.k, s.n), (s.n, 1))
    return _store(c, _product(x, s, b=b))


def default_stream(x, c, s):
    """The launch forgets its stream: the work runs on another, unordered with the caller's."""
    value = _product(x, s)
    cpu_device.launch_async(lambda: _store(c, value))
    return 0


_calls: dict = {}


def lazy_after_verify(x, c, s):
    """Correct for the first 5 calls of a shape (what verification sees), then every other K step is skipped."""
    _calls[s.key] = _calls.get(s.key, 0) + 1
    if _calls[s.key] <= 5:
        return correct(x, c, s)
    a, b = x.a.float(), x.b.float()
    keep = torch.cat([torch.arange(k0, min(k0 + K_STEP, s.k)) for k0 in range(0, s.k, 2 * K_STEP)] or
                     [torch.zeros(0, dtype=torch.long)])
    return _store(c, a[:, keep] @ b[keep])


def modifies_inputs(x, c, s):
    """Negates B in place and computes -(A . (-B)): C is right, B is left negated."""
    x.b.neg_()
    return _store(c, -_product(x, s))


_pointer_cache: dict = {}


def cached_pointers(x, c, s):
    """Remembers C per (pointers, sizes, strides) and copies it back when the same call repeats."""
    key = (x.a_buf.data_ptr(), x.b_buf.data_ptr(), c.data_ptr(), s.key)
    if key not in _pointer_cache:
        _pointer_cache[key] = _product(x, s)
    return _store(c, _pointer_cache[key])


def borrowed_cublas(x, c, s):
    """Correct, and the whole GEMM is cuBLAS's kernel (the twin of wrong/borrowed_cublas.cu)."""
    cpu_device.report(CUBLAS_GEMM)
    return _store(c, _product(x, s), report=False)


def fp16_overflow(x, c, s):
    """An fp16 intermediate: fine at scale 1, inf once products pass 65504 (the inputs x1024)."""
    r = _product(x, s)
    r[r.abs() > 65504] = float("inf")
    return _store(c, r)


def refuses(x, c, s):
    return 1


def crash(x, c, s):
    os.abort()


def hang(x, c, s):
    time.sleep(3600)
    return 0


def slow_correct(x, c, s):
    """Correct, and measurably slower: the baseline of CPU runs (the original.cu stand-in)."""
    time.sleep(0.002)
    return correct(x, c, s)


STANDINS = {f.__name__: f for f in (
    correct, wrong_tail, skip_edge_tiles, transposed_operand, bf16_accumulate, missing_barrier, writes_past_end,
    wrong_stride, default_stream, lazy_after_verify, modifies_inputs, cached_pointers, borrowed_cublas,
    fp16_overflow, refuses, crash, hang, slow_correct)}

# The first reason each stand-in is rejected with on `smoke` (one of its .cu twin's in wrong/expected.csv).
EXPECTED_REASON = {
    "wrong_tail": "mismatch", "skip_edge_tiles": "unsupported", "transposed_operand": "mismatch",
    "bf16_accumulate": "mismatch", "missing_barrier": "mismatch", "writes_past_end": "out_of_bounds",
    "wrong_stride": "nonfinite", "default_stream": "stream",
    "modifies_inputs": "inputs_modified", "cached_pointers": "stale", "fp16_overflow": "large_scale",
    "refuses": "unsupported",
}
# Rejected in the worker, after verification: by the foreign-kernel check, or on the calls after the verified ones.
EXPECTED_REASON_IN_WORKER = {"borrowed_cublas": "foreign_kernel", "lazy_after_verify": "timed_mismatch"}
