"""The device-time proof's second instrument, switched on by WORKBENCH_TIMING_PROFILE (tests/test_gpu_device_time.py).

With the switch, Timer.time also profiles a few replays right after its samples (torch.profiler's summed device
time, in the state the samples were taken in: `Stats.profiled_us`) and replays the same graphs in other patterns
than the timed one (`Stats.profile_detail`), which is how the check between samples was found to cost the next
replay ~4.5 us (docs/benchmarks.md). Nothing here ever enters a timed figure.
"""
from __future__ import annotations

import statistics
from typing import Optional

import torch

PROFILE_ENV = "WORKBENCH_TIMING_PROFILE"   # how many replays to profile next to the samples (device-time proof)
MAX_PROFILE_SAMPLES = 20
PATTERN_REPS = 6       # replays per pattern of pattern_samples (one after(i) each in its 'checked' pattern)


def profile_samples_from_env(environ: dict) -> int:
    """The replay count PROFILE_ENV asks for (0 when unset); a clear error for anything but 0-20."""
    raw = (environ.get(PROFILE_ENV) or "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > MAX_PROFILE_SAMPLES:
        raise ValueError(f"{PROFILE_ENV}={raw!r}: not a number of replays to profile next to the timed samples "
                         f"(0-{MAX_PROFILE_SAMPLES}); unset it, or give e.g. 3")
    return int(raw)


def profiled_sample(timer, graph, launch, i: int) -> Optional[float]:
    """torch.profiler's summed device time of one replay (or plain call), L2 flushed before it like a sample;
    None on the CPU or when the profiler saw nothing."""
    if not timer.cuda:        # the same work, so before/after bracket a real replay; no profiler to read
        graph.replay() if graph is not None else launch(i)
        return None
    from workbench.harness.activity import timed_recording

    def profiled(run) -> list:
        timer._flush_l2()
        torch.cuda.synchronize()
        with timed_recording() as spans:
            run()
            torch.cuda.synchronize()
        return spans

    spans = profiled(graph.graph.replay) if graph is not None else []
    if not spans:         # a profiler that does not see into graph replays: the same work as a plain call
        spans = profiled(lambda: launch(i))
    return sum(us for _, us in spans) if spans else None


def pattern_samples(sample, before, after, n_sets: int, reps: int = PATTERN_REPS) -> dict:
    """The proof's diagnosis (profile mode only): the same graphs replayed in other patterns than the timed
    one, medians in us. 'bare' replays see old contents and unpoisoned outputs: a figure to compare, never
    a timing."""
    patterns = {
        "bare": lambda i: sample(i),
        "before": lambda i: (before(i), sample(i))[1],
        "checked": lambda i: (before(i), sample(i), after(i))[1],
        "bare_again": lambda i: sample(i),
    }
    return {name: round(statistics.median(run(k % n_sets) for k in range(reps)), 3)
            for name, run in patterns.items()}
