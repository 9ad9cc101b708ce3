"""A CPU stand-in for a GPU's asynchronous execution, for CUDA-graph capture and for the profiler, so CI can
exercise the stream contract, the timer's graph path and the foreign-kernel check without a GPU.

Stand-in kernels that model "work launched on another stream" hand it to `launch_async`; the harness's
device-wide `synchronize()` waits for it, exactly as cudaDeviceSynchronize waits for every stream.

`Graph` stands in for `torch.cuda.CUDAGraph`. On the CPU the call *is* the work, so a replay runs the captured
call again (with `replaying()` true); what the model keeps is the rule that decides whether a call can be
captured at all: a call that synchronizes the device or launches work off the captured stream during capture
fails, as `cudaDeviceSynchronize` or an unjoined side stream makes a real capture fail.

Stand-ins name the "kernels" they run with `report`; inside `recording()` those names are collected, as the
profiler collects a GPU's kernel names (activity.py).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

_pending: list[threading.Thread] = []
_lock = threading.Lock()
_mode = {"capturing": False, "replaying": False}


class CaptureError(RuntimeError):
    """What a real capture reports as cudaErrorStreamCaptureUnsupported / ...Invalidated / ...Unjoined."""


def capturing() -> bool:
    return _mode["capturing"]


def replaying() -> bool:
    return _mode["replaying"]


def launch_async(fn, delay_s: float = 0.05) -> None:
    if _mode["capturing"]:
        raise CaptureError("work launched on another stream during capture (never joined to the captured stream)")

    def run():
        threading.Event().wait(delay_s)
        fn()

    thread = threading.Thread(target=run, daemon=True)
    with _lock:
        _pending.append(thread)
    thread.start()


def synchronize() -> None:
    if _mode["capturing"]:
        raise CaptureError("synchronize during capture (operation not permitted when stream is capturing)")
    with _lock:
        threads = list(_pending)
        _pending.clear()
    for thread in threads:
        thread.join()


class Graph:
    """capture(call) runs the call once in capture mode and keeps it; replay() runs it again."""

    def __init__(self):
        self.call: Callable[[], object] | None = None

    def capture(self, call: Callable[[], object]):
        _mode["capturing"] = True
        try:
            result = call()
        finally:
            _mode["capturing"] = False    # a failed capture leaves nothing behind
        self.call = call
        return result

    def replay(self) -> None:
        if self.call is None:
            raise RuntimeError("replay without a successful capture")
        _mode["replaying"] = True
        try:
            self.call()
        finally:
            _mode["replaying"] = False


_recorded: list | None = None


def report(name: str) -> None:
    """A stand-in ran the device work `name` (a kernel's demangled name, or `Memcpy DtoD (Device -> Device)`)."""
    with _lock:
        if _recorded is not None:
            _recorded.append(name)


@contextmanager
def recording():
    global _recorded
    names: list[str] = []
    with _lock:
        _recorded = names
    try:
        yield names
    finally:
        with _lock:
            _recorded = None
