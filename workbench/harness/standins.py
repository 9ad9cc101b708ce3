"""CPU stand-in kernels: Python versions of the correct kernel and of every failure in kernels/attn_fwd/wrong/.

They follow the kernel calling convention of verify.py (`kernel(inputs, o, lse, scenario) -> int`) and run on
CPU tensors, so CI proves that every rejection reason fires without a GPU. The worker accepts them as
`standin:NAME` in place of a .cu path; `crash` and `hang` exist to test process isolation and timeouts.

Every stand-in is one "library" whose kernels are KERNELS (mangled, as a cubin holds them). Writing the outputs
reports the matching kernel to cpu_device (demangled, as the profiler names it), so the worker's foreign-kernel
check sees a CPU stand-in's device activity the way it sees a GPU's; `foreign_gemm` also reports cuBLAS's kernels.
"""
from __future__ import annotations

import os
import time

import torch

from workbench.harness import cpu_device
from workbench.harness.reference import Inputs, reference, softmax_scale
from workbench.harness.scenarios import Scenario

TILE = 32
# the stand-ins' own "kernels": void standin::attention<64|128|256>(float const*)
KERNELS = [f"_ZN7standin9attentionILi{d}EEEvPKf" for d in (64, 128, 256)]
CUBLAS_GEMM = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN"   # a kernel name torch.profiler shows for a bf16 GEMM


def _attention(inputs: Inputs, s: Scenario, *, causal=None, scale=None, keys=None, dims=None):
    """fp32 attention on all rows, with knobs to reproduce bugs (mask off, wrong scale, fewer keys/dims)."""
    shape = Scenario(**{**s.to_dict(), "causal": s.causal if causal is None else causal})
    q, k, v = inputs.q, inputs.k, inputs.v
    if keys is not None:
        k, v = k[:, :keys], v[:, :keys]
        shape = Scenario(**{**shape.to_dict(), "seqlen_k": max(1, keys)})
    if dims is not None:
        q = torch.cat([q[..., :dims], torch.zeros_like(q[..., dims:])], dim=-1)
    if scale is not None:
        q = (q.float() * (scale / softmax_scale(s))).to(torch.bfloat16)
    ref = reference(shape, Inputs(q, k, v), torch.arange(s.seqlen_q))
    if keys == 0:
        ref.o.zero_()
        ref.lse.fill_(float("-inf"))
    return ref.o, ref.lse


def _store(o, lse, ref_o, ref_lse, report: bool = True) -> int:
    if report:
        d = o.shape[-1]
        cpu_device.report(f"void standin::attention<{64 if d <= 64 else 128 if d <= 128 else 256}>(float const*)")
    o.copy_(ref_o.to(torch.bfloat16))
    lse.copy_(ref_lse)
    return 0


def correct(inputs, o, lse, s):
    return _store(o, lse, *_attention(inputs, s))


def writes_nothing(inputs, o, lse, s):
    return 0


def skip_last_tile(inputs, o, lse, s):
    return _store(o, lse, *_attention(inputs, s, keys=((s.seqlen_k - 1) // TILE) * TILE))


def no_causal_mask(inputs, o, lse, s):
    return _store(o, lse, *_attention(inputs, s, causal=False))


def wrong_scale(inputs, o, lse, s):
    return _store(o, lse, *_attention(inputs, s, scale=1.0 / s.head_dim))


def no_running_max(inputs, o, lse, s):
    """exp(s) summed without subtracting the max: fine at scale 1, inf/NaN once scores reach ~90."""
    q, k, v = inputs.q.float(), inputs.k.float(), inputs.v.float()
    g = s.group_size
    k = k.repeat_interleave(g, dim=2)
    v = v.repeat_interleave(g, dim=2)
    scores = torch.einsum("bihd,bjhd->bhij", q, k) * softmax_scale(s)
    if s.causal:
        i = torch.arange(s.seqlen_q)[:, None]
        j = torch.arange(s.seqlen_k)[None, :]
        scores = scores.masked_fill(j > i + s.seqlen_k - s.seqlen_q, float("-inf"))
    weights = torch.exp(scores)
    denom = weights.sum(-1)
    out = torch.einsum("bhij,bjhd->bihd", weights / denom[..., None], v)
    out = torch.where(denom.permute(0, 2, 1)[..., None] > 0, out, torch.zeros_like(out))
    return _store(o, lse, out, torch.log(denom))


def modifies_inputs(inputs, o, lse, s):
    inputs.q.mul_(2.0)   # "pre-scale q in place", then compensate: the output is right, the input is not
    return _store(o, lse, *_attention(inputs, s, scale=softmax_scale(s) / 2.0))


def side_stream(inputs, o, lse, s):
    ref_o, ref_lse = _attention(inputs, s)
    cpu_device.launch_async(lambda: _store(o, lse, ref_o, ref_lse))
    return 0


def one_head_dim(inputs, o, lse, s):
    if s.head_dim == 128:
        return correct(inputs, o, lse, s)
    return _store(o, lse, *_attention(inputs, s, dims=min(s.head_dim, 32)))


_pointer_cache: dict = {}


def cached_pointers(inputs, o, lse, s):
    key = (inputs.q.data_ptr(), inputs.k.data_ptr(), inputs.v.data_ptr(), o.data_ptr(), s.key)
    if key in _pointer_cache:
        cached_o, cached_lse = _pointer_cache[key]
        return _store(o, lse, cached_o, cached_lse)
    ref_o, ref_lse = _attention(inputs, s)
    _pointer_cache[key] = (ref_o.clone(), ref_lse.clone())
    return _store(o, lse, ref_o, ref_lse)


def writes_past_end(inputs, o, lse, s):
    _store(o, lse, *_attention(inputs, s))
    row = s.heads_q * s.head_dim
    past = torch.as_strided(o, (row,), (1,), o.storage_offset() + o.numel())
    past.zero_()
    return 0


def missing_barrier(inputs, o, lse, s):
    """A race: a few elements come out differently on every call."""
    rc = correct(inputs, o, lse, s)
    bits = o.view(-1).view(torch.int16)
    picks = torch.randint(0, bits.numel(), (max(1, bits.numel() // 1000),))
    bits[picks] ^= 1          # one ulp: inside every tolerance, but not the same bits twice
    return rc


def wrong_lse(inputs, o, lse, s):
    ref_o, ref_lse = _attention(inputs, s)
    return _store(o, lse, ref_o, ref_lse / torch.log(torch.tensor(2.0)))


_calls: dict = {}


def degrades_after_warmup(inputs, o, lse, s):
    """Right for the first calls of a shape (what verification sees), then skips half the keys."""
    _calls[s.key] = _calls.get(s.key, 0) + 1
    if _calls[s.key] <= 5:
        return correct(inputs, o, lse, s)
    return _store(o, lse, *_attention(inputs, s, keys=max(1, s.seqlen_k // 2)))


def syncs_in_call(inputs, o, lse, s):
    """Correct, but synchronizes the device inside the call (as a kernel calling cudaDeviceSynchronize or a
    blocking cudaMemcpy does): it cannot be captured into a graph, so the timer falls back and flags it."""
    rc = correct(inputs, o, lse, s)
    cpu_device.synchronize()
    return rc


def lazy_when_captured(inputs, o, lse, s):
    """A cheat aimed at graph timing: correct when called, but what it enqueues while being captured (and so
    every replay) skips half the keys, as a host that checks cudaStreamIsCapturing and launches a cheaper kernel."""
    if cpu_device.capturing() or cpu_device.replaying():
        return _store(o, lse, *_attention(inputs, s, keys=max(1, s.seqlen_k // 2)))
    return correct(inputs, o, lse, s)


def refuses_d256(inputs, o, lse, s):
    return 1 if s.head_dim == 256 else correct(inputs, o, lse, s)


def foreign_gemm(inputs, o, lse, s):
    """Correct, with both GEMMs done by cuBLAS (the twin of wrong/borrowed_gemm.cu): its kernels are not ours."""
    cpu_device.report(CUBLAS_GEMM)
    cpu_device.report(CUBLAS_GEMM)
    return correct(inputs, o, lse, s)


def foreign_when_captured(inputs, o, lse, s):
    """Its own kernel when called, cuBLAS's when captured into a graph (so in every timed replay)."""
    if cpu_device.capturing() or cpu_device.replaying():
        return foreign_gemm(inputs, o, lse, s)
    return correct(inputs, o, lse, s)


def hides_from_profiler(inputs, o, lse, s):
    """Correct, and no device activity recorded at all (as if the call had switched the profiler off)."""
    return _store(o, lse, *_attention(inputs, s), report=False)


def copies_result(inputs, o, lse, s):
    """Correct: its own kernel writes a scratch buffer, then a device-to-device copy moves it (allowed)."""
    rc = correct(inputs, o, lse, s)
    cpu_device.report("Memcpy DtoD (Device -> Device)")
    return rc


def crash(inputs, o, lse, s):
    os.abort()


def hang(inputs, o, lse, s):
    time.sleep(3600)
    return 0


def hangs_on_keyless_rows(inputs, o, lse, s):
    """Correct, except that it never returns where its first block of rows sees no key (the twin of
    wrong/hangs_on_keyless_rows.cu, whose blocks are 128/64/32 rows at head_dim 64/128/256: run 57's shape class,
    which smoke's emptyrows shape does not reach and edge's long causal queries over few keys do)."""
    rows = 128 if s.head_dim <= 64 else 64 if s.head_dim <= 128 else 32
    if s.causal and s.seqlen_q - s.seqlen_k >= min(rows, s.seqlen_q):
        time.sleep(3600)
    return correct(inputs, o, lse, s)


def cuda_error_on_d128(inputs, o, lse, s):
    """Correct, except that head dim 128 fails as a faulting kernel does (the worker stops: a lost CUDA context)."""
    if s.head_dim == 128:
        raise RuntimeError("CUDA error: an illegal memory access was encountered (a stand-in's)")
    return correct(inputs, o, lse, s)


def slow_correct(inputs, o, lse, s):
    """Correct, and measurably slower: a baseline for speedup arithmetic in CPU tests."""
    start = time.perf_counter()
    result = correct(inputs, o, lse, s)
    # at least 8 ms (4x a correct stand-in's call on an idle 2-core machine), and 1.5x this call's own work, so the
    # margin holds when load stretches every call (at load ~10 calls read 20-800 ms and a fixed 8 ms was noise:
    # test_correct_standin_end_to_end's geomean fell under 1); capped so a stalled call stays a short one
    time.sleep(max(0.008, min(1.0, 1.5 * (time.perf_counter() - start))))
    return result


STANDINS = {f.__name__: f for f in (
    correct, writes_nothing, skip_last_tile, no_causal_mask, wrong_scale, no_running_max, modifies_inputs,
    side_stream, one_head_dim, cached_pointers, writes_past_end, missing_barrier, wrong_lse, refuses_d256,
    degrades_after_warmup, syncs_in_call, lazy_when_captured, foreign_gemm, foreign_when_captured,
    hides_from_profiler, copies_result, crash, hang, hangs_on_keyless_rows, cuda_error_on_d128, slow_correct)}

# The reason each stand-in must be rejected with (the GPU twins in kernels/attn_fwd/wrong/expected.csv).
EXPECTED_REASON = {
    "writes_nothing": "unwritten", "skip_last_tile": "mismatch", "no_causal_mask": "mismatch",
    "wrong_scale": "mismatch", "no_running_max": "large_scale", "modifies_inputs": "inputs_modified",
    "side_stream": "stream", "one_head_dim": "mismatch", "cached_pointers": "stale",
    "writes_past_end": "out_of_bounds", "missing_barrier": "nondeterministic", "wrong_lse": "lse_mismatch",
    "refuses_d256": "unsupported",
}
# Rejected by the worker's foreign-kernel check, which runs after verification (tests/test_foreign.py).
EXPECTED_REASON_IN_WORKER = {"foreign_gemm": "foreign_kernel", "foreign_when_captured": "foreign_kernel",
                             "hides_from_profiler": "foreign_kernel"}
