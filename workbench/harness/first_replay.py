"""The baseline's first call of a scenario as its only timed sample, for a call predicted longer than the timer's
cap: one execution of it instead of two (the plain first call, then the one sample rep_count.py takes).

rep_count's rule already times a call longer than `time_cap_s` with a single sample, and the baseline's first call
of a scenario is made anyway (its comparison rows, the foreign-kernel check; baseline_role.py). For such a call
the first call *is* that sample: captured on the first fixed seed's inputs, uploaded without a run
(graph_capture.upload), replayed once after the L2 flush between the in-graph events (tared, as every sample),
and recorded for the foreign-kernel check around the replay only (the profiler starts after the flush and a
device synchronize, so neither the flush nor the tare is in the recording); what it wrote gives the rows. Its
`call_us` is that replay's wall time (a graph launch; the host share of a call this long is under 0.1 %).

Which calls: a prediction from the baseline's own timings of other shapes in the cache (median us per flop; the
fp32 original on the H200's `full`: 0.097-0.124 us/MFLOP from p10 to p90), at PREDICT_MARGIN x the cap or more:
13 of the original's calls there, 20.6 s of its one-call sum of 33.2 s. Where the replay reads under the cap after
all, it stands as the first call (its wall time the warm call) and the timing goes on as before; where it cannot
be made this way (no upload without a run, the call does not capture, the profiler sees nothing inside a replay,
other timing rules) the caller makes its plain first call, as before.
"""
from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Optional

from workbench.harness import activity, rep_count
from workbench.harness.graph_capture import CaptureFailed, upload
from workbench.harness.result import Stats
from workbench.harness.timing import GRAPH_REPLAY, GRAPH_REPLAY_OUTER, tared

PREDICT_MARGIN = 2.0     # predicted >= 2x the cap: the spread of us per flop above never halves a call
MIN_PRIORS = 3           # timings of other shapes before a prediction is trusted


def predicted_us(known: Callable, shapes: list, s) -> Optional[float]:
    """The call's predicted device time on s from the timings `known(shape)` (Stats or None) of other shapes."""
    rates = []
    for other in shapes:
        if other.key == s.key or other.flops() <= 0:
            continue
        stats = known(other)
        if stats is not None and stats.median_us > 0:
            rates.append(stats.median_us / other.flops())
    if len(rates) < MIN_PRIORS or s.flops() <= 0:
        return None
    return statistics.median(rates) * s.flops()


def worth_it(timer, predicted: Optional[float]) -> bool:
    cfg = timer.cfg
    return (predicted is not None and cfg.rules == rep_count.COST_SIZED and cfg.profile_samples == 0
            and predicted * 1e-6 >= PREDICT_MARGIN * cfg.time_cap_s)


@dataclass
class Replayed:
    wall_us: float                   # the replay's wall time (graph launch + synchronize)
    seen: Optional[list]             # what the device ran during it (None: not recorded)
    stats: Optional[Stats]           # the one sample, when the call read at least the cap; else None


def first_replay(timer, launch: Callable[[], object], poison: Callable[[], None], record: bool,
                 device: str) -> Optional[Replayed]:
    """Capture launch() (the call on its inputs), upload it, poison the outputs, replay once, timed (and recorded
    when `record`). None when it cannot be done this way: on a GPU nothing was executed then, but for a recording
    that saw nothing (the one replay ran; the caller's plain call is a second execution, as before this module)."""
    cuda = device.startswith("cuda")
    if cuda:
        timer._tare()                     # its empty graph's replays happen now, not in the recording
    try:
        g = timer._capture(lambda _i: launch(), 0)
    except CaptureFailed:
        return None
    if cuda and not upload(g):
        return None
    clock_before = timer.clock_mhz()
    poison()
    timer._flush_l2()
    timer._sync()
    scope = activity.recording(device) if record else contextlib.nullcontext(None)
    with scope as seen:
        if cuda:
            start, end = timer._events()
            t0 = time.perf_counter()
            start.record()
            g.graph.replay()
            end.record()
            timer._sync()
            wall_us = (time.perf_counter() - t0) * 1e6
        else:
            t0 = time.perf_counter()
            g.replay()
            timer._sync()
            wall_us = reading = (time.perf_counter() - t0) * 1e6
    if record and not seen:
        return None                       # nothing to judge: the caller records a plain call, as before
    method = GRAPH_REPLAY
    if cuda:
        reading = start.elapsed_time(end) * 1000.0
        inner = g.inner[0].elapsed_time(g.inner[1]) * 1000.0 if g.inner is not None else float("nan")
        if 0.0 < inner <= reading + 1.0:
            reading = tared(inner, timer._tare())
        else:
            method = GRAPH_REPLAY_OUTER
    del g
    if reading * 1e-6 < timer.cfg.time_cap_s:      # shorter than predicted: it was the first call, nothing more
        return Replayed(wall_us, seen, None)
    clocks = [c for c in (clock_before, timer.clock_mhz()) if c]
    stats = dataclasses.replace(Stats.from_samples([reading]), method=method, call_us=wall_us,
                                clock_mhz=round(sum(clocks) / len(clocks), 1) if clocks else None)
    return Replayed(wall_us, seen, stats)
