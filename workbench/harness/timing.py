"""Timing: the device time of one call, measured the same way for every implementation (candidate, original,
anchors), with the host's share of a call reported apart.

For one implementation on one scenario, after warm-up:
  call_us   a few plain calls, wall time from the Python call until its GPU work is done (host overhead
            included). Reported next to the device time, never in a geomean.
  capture   one call per input set captured into a CUDA graph on the current stream (the worker's non-default
            stream), between two timing events recorded inside the graph.
  samples   before(i) (new input contents, poisoned outputs) -> L2 flush -> graph replay -> device-wide
            synchronize -> after(i) (what the replay wrote is checked), until the standard error is small or
            the time cap is hit. How many samples, plain calls and input sets a call gets follows what it
            costs (rep_count.py): min_reps for short calls, one or two samples on one input set for long ones,
            whose graph is uploaded without a run (the first replay of a short call's graph is its upload).
The figure (`graph_replay`) is the time between the in-graph events: from the first to the last GPU work the
call enqueues, less the tare: what the same event pair reads with nothing between them (measured once per
timer on an empty captured graph, ~1.25 us on the H200; `Timer.tare_us`), the instrument's own zero offset.
No host time is in it; the implementation's host code does not even run on a replay, which is why every
replay's output is checked (a kernel that turns lazy is captured lazy and fails there).

A call that cannot be captured (it allocates, synchronizes, queries or uses the legacy stream, returns an
error during capture, or torch refuses) is cleaned up after (capture ended, the graph's memory pool released,
the stream usable) and timed with `events_delayed`: a GPU spin kernel longer than the host call is enqueued
before the start event, so the host call overlaps it and only the call's GPU work lies between the events.
Every number is a `Stats` (median, p10, p90, mean, std-err, n, method, call_us, note).

The capture itself, and the clean-up after one that failed, is graph_capture.py.

On the CPU (tests, stand-in kernels) the same logic runs against `cpu_device`: its `Graph` re-runs the call
on replay, and a call that synchronizes or leaves the stream during capture fails it; times are wall clock.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from workbench.harness import rep_count, rest
from workbench.harness.graph_capture import CaptureFailed, CudaGraph, capture_cuda, failed_rc, one_line, upload
from workbench.harness.result import Stats
from workbench.harness.timing_proof import PATTERN_REPS, pattern_samples, profiled_sample

# Part of every timing-cache key: figures measured before device timing (events around the Python call)
# are never mixed with these. Bump it whenever what a timed figure means changes.
TIMING_VERSION = "device-time-4"   # 2: the event pair's tare subtracted; 3: checked samples primed; 4: the
                                   # candidate's outputs checked after its samples, not between them
GRAPH_REPLAY = "graph_replay"              # events inside the captured graph: first to last GPU work of the call
GRAPH_REPLAY_OUTER = "graph_replay_outer"  # events around the graph launch (where in-graph events are unusable)
EVENTS_DELAYED = "events_delayed"          # not capturable: events around the call, behind a GPU delay kernel
DEVICE_METHODS = (GRAPH_REPLAY, GRAPH_REPLAY_OUTER)


@dataclass
class TimingConfig:
    min_reps: int = 5
    max_reps: int = 100
    target_rel_stderr: float = 0.01
    time_cap_s: float = 0.4
    warmup: int = 2
    input_sets: int = 2
    l2_flush_bytes: int = 256 << 20
    noisy_rel_spread: float = 0.10
    call_samples: int = 5              # plain calls timed by wall clock for call_us
    delay_min_us: float = 300.0        # events_delayed: the GPU delay before the start event, at least ...
    delay_max_us: float = 5000.0       # ... and at most this (1.5x call_us + 100 us in between)
    prime_below_us: float = 1000.0     # prime (time(prime=True)) only calls that read shorter than this
    profile_samples: int = 0           # replays also profiled (torch.profiler) after the samples: the proof only
    rules: str = rep_count.COST_SIZED  # how many calls: cost-sized (issue 24) or the fixed rules before it (A/B)
    rest_s: float = 0.0                # idle this long before each implementation's samples on a row whose
    rest_above_floor_us: float = 2000.0  # physical floor is this or more (rest.py; the worker sets Timer.rest_s)

    @classmethod
    def from_problem(cls, section: dict) -> "TimingConfig":
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})


TARE_SAMPLES = 21
CLOCK_PROBE_CYCLES = 200_000
MIN_TARED_US = 0.05    # a call whose work reads no longer than the empty event pair still took some time


def tared(reading_us: float, tare_us: float) -> float:
    """An in-graph reading less the event pair's own zero offset (never below MIN_TARED_US)."""
    return max(reading_us - tare_us, MIN_TARED_US)


class Timer:
    def __init__(self, device: str, cfg: TimingConfig):
        self.device, self.cfg = device, cfg
        self.cuda = device.startswith("cuda")
        self.flush_buffer = (torch.empty(cfg.l2_flush_bytes // 4, dtype=torch.int32, device=device)
                             if self.cuda else None)
        self.inner_events_ok: Optional[bool] = None   # learnt on the first graph: can in-graph events be read?
        self.cycles_per_us: Optional[float] = None    # torch.cuda._sleep calibration, on first use
        self.tare_us: Optional[float] = None          # the in-graph event pair around nothing, on first use
        self.last: dict = {}                          # diagnostics of the last time() (the GPU test prints them)
        self.rest_s = 0.0                             # the current row's rest before samples (rest.rest_for_row_s)

    # ---- device primitives ---------------------------------------------------------------------------
    def _flush_l2(self) -> None:
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()   # device-wide: nothing of this sample leaks into the next
        else:
            from workbench.harness import cpu_device
            cpu_device.synchronize()

    def _events(self, external: bool = False):
        if external:
            return (torch.cuda.Event(enable_timing=True, external=True),
                    torch.cuda.Event(enable_timing=True, external=True))
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    # ---- plain calls: warm-up and call_us ------------------------------------------------------------
    def _call_wall_us(self, launch, i: int) -> float:
        self._flush_l2()
        self._sync()
        t0 = time.perf_counter()
        launch(i)
        self._sync()
        return (time.perf_counter() - t0) * 1e6

    # ---- capture ---------------------------------------------------------------------------------------
    def _capture(self, launch, i: int):
        return self._capture_cuda(launch, i) if self.cuda else self._capture_cpu(launch, i)

    def _capture_cpu(self, launch, i: int):
        from workbench.harness import cpu_device
        graph = cpu_device.Graph()
        try:
            rc = graph.capture(lambda: launch(i))
        except Exception as err:
            raise CaptureFailed(one_line(err)) from None
        if failed_rc(rc):
            raise CaptureFailed(f"the call returned error code {rc} during capture")
        return graph

    def _capture_cuda(self, launch, i: int) -> CudaGraph:
        if self.inner_events_ok is False:
            return self._capture_cuda_once(launch, i, with_inner=False)
        try:
            return self._capture_cuda_once(launch, i, with_inner=True)
        except CaptureFailed:
            if self.inner_events_ok:          # in-graph events worked before: the call is what failed
                raise
        graph = self._capture_cuda_once(launch, i, with_inner=False)   # raises when the call is what failed
        self.inner_events_ok = False          # the call captures, the in-graph events do not: time around it
        return graph

    def _capture_cuda_once(self, launch, i: int, with_inner: bool) -> CudaGraph:
        graph, inner_ok = capture_cuda(launch, i, with_inner)
        if inner_ok is False:             # this torch has no external events
            self.inner_events_ok = False
        return graph

    def _tare(self) -> float:
        """Median reading of the in-graph event pair with no work between them (flushed L2, like a sample)."""
        if self.tare_us is None:
            self.tare_us = 0.0
            try:
                g = self._capture_cuda_once(lambda _i: 0, 0, with_inner=True)
            except CaptureFailed:
                return 0.0
            if g.inner is not None:
                readings = []
                for _ in range(TARE_SAMPLES + 1):          # the first replay uploads the graph
                    self._flush_l2()
                    g.graph.replay()
                    torch.cuda.synchronize()
                    readings.append(g.inner[0].elapsed_time(g.inner[1]) * 1000.0)
                self.tare_us = max(0.0, statistics.median(readings[1:]))
            del g
        return self.tare_us

    # ---- one timed sample per method -------------------------------------------------------------------
    def _replay_sample(self, g) -> float:
        if not self.cuda:
            self._sync()
            t0 = time.perf_counter()
            g.replay()
            self._sync()
            return (time.perf_counter() - t0) * 1e6
        start, end = self._outer
        self._flush_l2()
        start.record()
        g.graph.replay()
        end.record()
        torch.cuda.synchronize()
        outer = start.elapsed_time(end) * 1000.0
        self.last.setdefault("outer_us", []).append(outer)
        if g.inner is None:
            return outer
        try:
            inner = g.inner[0].elapsed_time(g.inner[1]) * 1000.0
        except RuntimeError:
            inner = float("nan")
        if not (0.0 < inner <= outer + 1.0):   # unreadable or impossible: distrust in-graph events from now on
            self.inner_events_ok, g.inner = False, None
            return outer
        self.inner_events_ok = True
        return tared(inner, self._tare())

    def _delayed_sample(self, launch, i: int, delay_us: float) -> float:
        if not self.cuda:     # the CPU has no queue to put a delay in: the call is its own work
            self._sync()
            t0 = time.perf_counter()
            launch(i)
            self._sync()
            return (time.perf_counter() - t0) * 1e6
        start, end = self._outer
        self._flush_l2()
        torch.cuda._sleep(int(delay_us * self._cycles_per_us()))   # the host call overlaps this spin
        start.record()
        launch(i)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000.0

    def _sleep_rate(self, cycles: int) -> float:
        """Cycles per us of a torch.cuda._sleep of `cycles` between two events: the SM clock in MHz."""
        start, end = self._events()
        torch.cuda._sleep(2000)           # the events' and the kernel's first-launch costs are not in the reading
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        return cycles / max(start.elapsed_time(end) * 1000.0, 1e-3)

    def clock_mhz(self) -> Optional[float]:
        """The SM clock now (~100 us of spinning at 2 GHz); None on the CPU."""
        return self._sleep_rate(CLOCK_PROBE_CYCLES) if self.cuda else None

    def _cycles_per_us(self) -> float:   # the events_delayed spin's calibration, once (~1 ms)
        if self.cycles_per_us is None:
            self.cycles_per_us = self._sleep_rate(1 << 21)
        return self.cycles_per_us

    def _uploaded_quietly(self, graphs: list, call_us: float) -> bool:
        """A long call's graph uploaded without running it (graph_capture.upload; nothing to upload on the CPU),
        so its plain call, not an untimed replay, is the witness of the first sample (rep_count.enough_samples):
        the original's ~12 ms-3.7 s calls on `full` cost one execution less each (33 s a cold run). A short
        call keeps its untimed upload replay: there the first replay's own costs are a share of the reading."""
        if not rep_count.is_long(call_us, self.cfg) or self.cfg.rules != rep_count.COST_SIZED:
            return False
        return all(upload(g) for g in graphs) if self.cuda else True

    def checked_launches_at_most(self, n_sets: int) -> int:
        """How many times time() can call after(i): every plain call, upload, sample, profiled replay and the
        proof's checked pattern (worker.py sizes the buffers of the rows it keeps by it, timed_rows.py)."""
        cfg = self.cfg
        patterns = PATTERN_REPS if cfg.profile_samples else 0
        return (max(0, cfg.warmup) + max(1, cfg.call_samples) + max(1, n_sets) + max(1, cfg.max_reps)
                + max(0, cfg.profile_samples) + patterns)

    # ---- the whole measurement ---------------------------------------------------------------------------
    def time(self, launch: Callable[[int], object], before: Optional[Callable[[int], None]] = None,
             n_sets: Optional[int] = None, after: Optional[Callable[[int], None]] = None,
             prime: bool = False, warm_call_us: Optional[float] = None) -> Stats:
        """launch(i) enqueues one call on input set i (a kernel returns 0 or an error code); before(i) and
        after(i) run untimed around every call and replay (new input contents and poisoned outputs before,
        a check of what was written after).

        warm_call_us: the wall time of a plain call of the same shape the caller has just made (the baseline's
        recorded first call): when that call is long (rep_count.is_long) it is the warm-up and call_us, and no
        plain call is made here.

        after(i) should be cheap on the GPU: an fp32 reference computed between samples (cuBLAS) made the next
        replay read 4.3-4.6 us slower on the H200 (02_mma in the worker, unprimed: C_s100_d64_c0 6.1 -> 10.7 us,
        C_s100_d128_c1 7.5 -> 12.0; scripts/devtime_diag.py, 2026-12-01), which is why the worker only saves
        what a replay wrote there and checks it after the samples (worker.ScenarioRun.time_kernel).

        prime: replay (or call) the implementation once more, untimed, after each after(i) and before the next
        before(), so each sample starts as an anchor's does, after a call of its own, with the L2 still flushed
        before it. The primed call
        runs between two before(i), so every call sees new contents and the timed one poisoned outputs. Only a
        call whose untimed first samples read under cfg.prime_below_us is primed (a few us do not matter above)."""
        cfg = self.cfg
        n_sets = max(1, n_sets or cfg.input_sets)
        before = before or (lambda i: None)
        after = after or (lambda i: None)
        self.last = {}
        if self.cuda:
            self._outer = self._events()

        def plain(i: int) -> float:
            before(i)
            us = self._call_wall_us(launch, i)
            after(i)
            return us

        if rep_count.is_long(warm_call_us, cfg) and cfg.rules == rep_count.COST_SIZED:
            calls = [warm_call_us]            # warm already, and long: that call is the call_us sample
        else:
            warm: list[float] = []            # a slow kernel is warm after one call; don't pay for more
            while rep_count.more_plain_calls(warm, cfg.warmup, cfg, warm_up=True):
                warm.append(plain(len(warm) % n_sets))
            calls = []
            while rep_count.more_plain_calls(calls, max(1, cfg.call_samples), cfg):
                calls.append(plain(len(calls) % n_sets))
        call_us = statistics.median(calls)
        n_sets = rep_count.input_sets(call_us, cfg, n_sets)   # a long call: one graph to capture and upload

        graphs, note = [], ""
        try:
            for i in range(n_sets):
                before(i)           # the capture call sees new contents too (on the CPU it runs)
                graphs.append(self._capture(launch, i))
        except CaptureFailed as why:
            graphs, note = [], f"not graph-capturable: {why}"
        if graphs:
            sample = lambda i: self._replay_sample(graphs[i])
        else:
            delay_us = min(max(cfg.delay_min_us, 1.5 * call_us + 100.0), cfg.delay_max_us)
            sample = lambda i: self._delayed_sample(launch, i, delay_us)

        uploads = []
        if graphs and self._uploaded_quietly(graphs, call_us):
            uploads = [call_us]     # the plain call is the witness: one execution less of a long call
        self.last["witness"] = "plain call" if uploads else "upload replay"
        for i in range(n_sets if not uploads else 0):     # untimed: the first replay of a graph uploads it
            before(i)
            uploads.append(sample(i))
            after(i)
        # the state a check leaves costs a few us: it matters for short calls only, so long ones skip the prime
        prime = prime and min(uploads) < cfg.prime_below_us

        def again(i: int) -> None:           # untimed; before(i) gives the timed sample new contents after it
            if graphs:
                g = graphs[i]
                getattr(g, "graph", g).replay()
            else:
                launch(i)

        def prepare(i: int) -> None:         # untimed, before a sample (or a profiled replay) of set i
            if prime:                         # its own contents and outputs: before(i) again after it
                before(i)
                again(i)
            before(i)

        self.last["rested_s"] = rest.rest(self.rest_s, self._sync)
        clock_before = self.clock_mhz()
        self.last["outer_us"] = []
        self.last["primed"] = 0
        samples: list[float] = []
        while not rep_count.enough_samples(samples, cfg, witness_us=uploads[0]):
            i = len(samples) % n_sets
            prepare(i)
            self.last["primed"] += int(prime)
            us = sample(i)
            after(i)
            samples.append(us)
        profiled = []            # the proof's second instrument, in the state the samples were taken in
        for k in range(max(0, cfg.profile_samples)):
            i = k % n_sets
            prepare(i)
            us = profiled_sample(self, graphs[i] if graphs else None, launch, i)
            after(i)
            if us is not None:
                profiled.append(us)
        detail = pattern_samples(sample, before, after, n_sets) if cfg.profile_samples and graphs else None
        clocks = [c for c in (clock_before, self.clock_mhz()) if c]
        if not graphs:
            method = EVENTS_DELAYED
        elif self.cuda and any(g.inner is None for g in graphs):
            method = GRAPH_REPLAY_OUTER
        else:
            method = GRAPH_REPLAY
        del graphs                  # frees each graph and its memory pool
        clock = round(sum(clocks) / len(clocks), 1) if clocks else None
        self.last.update(method=method, samples_us=samples, call_us=calls, note=note, clock_mhz=clocks,
                         profiled_us=profiled)
        return dataclasses.replace(Stats.from_samples(samples), method=method, call_us=call_us, note=note,
                                   clock_mhz=clock, profiled_us=statistics.median(profiled) if profiled else None,
                                   profile_detail=detail)
