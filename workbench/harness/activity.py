"""Record the names of the device work (kernels, copies, sets) that ran inside a block of code.

On a GPU: torch.profiler with CUDA activity only (CUPTI through Kineto), whose kernel names are demangled by
libstdc++'s `__cxa_demangle`. Everything the device ran between the start and the end of the block is recorded,
whichever thread, stream or library launched it; the caller synchronises before the block (so the harness's own
fills and poison are not in it) and inside it, after the call (so the call's work is). On the CPU: the names
the stand-ins report through cpu_device.report, so the same check runs end to end in CI.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Iterator

from workbench.harness import cpu_device


def unavailable(device: str) -> str:
    """Why device activity cannot be recorded here ('' when it can)."""
    if not device.startswith("cuda"):
        return ""
    try:
        from torch.profiler import ProfilerActivity, supported_activities
    except ImportError as err:   # pragma: no cover - torch without its profiler
        return f"torch.profiler is missing ({err})"
    if ProfilerActivity.CUDA not in supported_activities():
        return "torch.profiler has no CUDA activity here (CUPTI not found)"
    return ""


@contextmanager
def _profiled() -> Iterator[list]:
    """torch.profiler with CUDA activity only around the block; yields a list that receives the profile."""
    from torch.profiler import ProfilerActivity, profile

    got: list = []
    with warnings.catch_warnings():   # "Profiler clears events at the end of each cycle": one cycle here
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            yield got
    got.append(prof)


@contextmanager
def recording(device: str) -> Iterator[list[str]]:
    """`with recording(device) as names: ...` -> names holds the device activity once the block has ended."""
    names: list[str] = []
    if not device.startswith("cuda"):
        with cpu_device.recording() as reported:
            yield names
        names.extend(reported)
        return
    with _profiled() as got:
        yield names
    names.extend(name for name, _, _ in _device_events(got[0]))   # everything, annotations too


@contextmanager
def timed_recording() -> Iterator[list[tuple[str, float]]]:
    """`with timed_recording() as spans: ...` -> (name, duration us) of each device activity of the block (GPU
    only; synchronisation records, which carry no work, and user annotations left out). The device-time proof
    reads these."""
    from workbench.harness.foreign import SYNC

    spans: list[tuple[str, float]] = []
    with _profiled() as got:
        yield spans
    spans.extend((name, us) for name, us, annotation in _device_events(got[0])
                 if not annotation and not SYNC.match(name))


def _device_events(prof) -> list[tuple[str, float, bool]]:
    """(name, duration us, is a user annotation) of each device-side event of a profile."""
    from torch.autograd import DeviceType

    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:   # the raw Kineto events: no tree building, nothing filtered out
        return [(e.name(), e.duration_ns() / 1e3, e.is_user_annotation()) for e in results.events()
                if e.device_type() == DeviceType.CUDA]
    return [(e.name, e.time_range.end - e.time_range.start, False) for e in prof.events()
            if e.device_type == DeviceType.CUDA]
