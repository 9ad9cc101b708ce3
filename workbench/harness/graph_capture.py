"""Capture one call into a CUDA graph, between timing events recorded inside it, and clean up after a capture
that failed (capture ended, the graph's memory pool given back to the allocator, the stream usable).

Used by the timer (timing.py) and by the foreign-kernel check's recorded replay (own_kernels.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch


class CaptureFailed(Exception):
    """The call could not be captured into a graph; the message says why, in one line."""


def one_line(err: object) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    name = type(err).__name__ if isinstance(err, BaseException) else ""
    return (f"{name}: {text}" if name else text)[:160]


def failed_rc(rc) -> bool:
    """A kernel's non-zero return code fails a capture; an anchor returns tensors, which is not a code."""
    return isinstance(rc, int) and not isinstance(rc, bool) and rc != 0


@dataclass
class CudaGraph:
    graph: object                 # torch.cuda.CUDAGraph
    inner: Optional[tuple]        # (start, end) events recorded inside the graph, or None


def capture_cuda(launch, i: int, with_inner: bool) -> tuple[CudaGraph, Optional[bool]]:
    """(the graph, False when in-graph events are not available in this torch, else None); raises CaptureFailed."""
    inner, inner_ok = None, None
    if with_inner:
        try:
            inner = (torch.cuda.Event(enable_timing=True, external=True),
                     torch.cuda.Event(enable_timing=True, external=True))
            for event in inner:          # create the CUDA events now: creation is no business of a capture
                event.record()
        except (TypeError, RuntimeError):  # this torch has no external events
            inner, inner_ok = None, False
    torch.cuda.synchronize()
    try:     # keep_graph: instantiate apart, so a failed capture_end always means "the pool is ours to free"
        graph, separate_instantiate = torch.cuda.CUDAGraph(keep_graph=True), True
    except TypeError:
        graph, separate_instantiate = torch.cuda.CUDAGraph(), False
    pool = torch.cuda.graph_pool_handle()
    error, rc, ended = None, 0, False
    try:
        graph.capture_begin(pool=pool)   # capture_error_mode "global": unsafe calls fail the capture
    except Exception as err:
        release_pool(pool)
        raise CaptureFailed(f"capture_begin: {one_line(err)}") from None
    try:
        if inner:
            inner[0].record()
        rc = launch(i)
        if inner:
            inner[1].record()
    except Exception as err:             # torch refuses an op during capture, or the call raised
        error = one_line(err)
    try:
        graph.capture_end()               # ends the capture even when it was invalidated
        ended = True
    except Exception as err:
        error = error or one_line(err)
    if not ended:                         # torch only gives the pool back after a successful capture
        release_pool(pool)
    if error is None and failed_rc(rc):
        error = f"the call returned error code {rc} during capture"
    if error is None and separate_instantiate:
        try:
            graph.instantiate()
        except Exception as err:
            error = f"instantiate: {one_line(err)}"
    if error is not None:
        del graph
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"CUDA stream still capturing after a failed capture ({error})")
        torch.cuda.synchronize()          # raises only if the context is lost: a real fault, not ours to hide
        raise CaptureFailed(error)
    return CudaGraph(graph, inner), inner_ok


def release_pool(pool) -> None:
    """Undo what CUDAGraph.capture_begin did to the caching allocator when the capture did not end well:
    stop routing allocations to the graph's pool and let the pool be freed (torch does this only after a
    successful capture_end; without it the allocator thinks a capture is still under way)."""
    device = torch.cuda.current_device()
    for name in ("_cuda_endAllocateToPool", "_cuda_endAllocateCurrentStreamToPool"):
        end = getattr(torch._C, name, None)
        if end is not None:
            try:
                end(device, pool)
                break
            except (RuntimeError, TypeError):
                continue
    release = getattr(torch._C, "_cuda_releasePool", None)
    if release is not None:
        try:
            release(device, pool)
        except (RuntimeError, TypeError):
            pass


def upload(graph: CudaGraph) -> bool:
    """Upload an instantiated graph to the device without running it (cuGraphUpload on the current stream), so
    its first replay is like any later one; False where this torch or driver cannot (the caller then replays
    once, untimed, as the upload). Only the driver's own entry point is called, on the graph's own handle."""
    raw = getattr(graph.graph, "raw_cuda_graph_exec", None)
    if raw is None:
        return False
    try:
        import ctypes
        driver = ctypes.CDLL("libcuda.so.1")
        handle = raw()
        stream = torch.cuda.current_stream().cuda_stream
        rc = driver.cuGraphUpload(ctypes.c_void_p(int(handle)), ctypes.c_void_p(stream))
    except (OSError, AttributeError, RuntimeError, TypeError, ValueError):
        return False
    return rc == 0
