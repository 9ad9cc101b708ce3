"""Anchors whose library builds a plan for each new shape and keeps it per thread: those first calls are made in
parallel threads, a chunk of scenarios ahead, and each shape is then timed in the thread that holds its plan.

cuDNN's SDPA through torch builds a cuDNN graph (heuristics, support check, kernel build) the first time it sees a
shape and keeps it in a *thread-local* cache (aten/src/ATen/native/cudnn/MHA.cpp, `thread_local mhagraphcache`).
On the H200 those first calls cost 0.5-1.6 s per shape, 95 s over the 107 shapes measured, against 0.48 s of
cuDNN's device time there (one call each; docs/benchmarks.md, "CPU analysis of the H200 logs"): ~160 s of a cold
`full` run, in one thread, while the GPU idled. Here that work is spread over `lanes` (one thread each), and
each lane keeps what it built.

What stays as it was, so the figures mean what they meant:
- nothing else runs meanwhile: `prepare` is called at the start of a scenario's anchor timings, after the
  candidate's and the baseline's work and recordings of that scenario, and returns only when every first call
  of the chunk has finished on the device; the worker's main thread waits throughout. No timed sample, no
  recorded call (own_kernels.py records whatever the device runs) can overlap a lane's work.
- `run` times a shape in the lane that built its plan while the main thread waits for it, on the main thread's
  stream: the same timer, the same calls, one at a time. A shape no lane prepared (its first call failed there,
  or an anchor without plans) is timed in the main thread as before.
- lanes are started after the sandbox is entered (worker.py makes this object lazily, per scenario), so they
  run as the dropped uid under the same filter as the main thread.
An anchor opts in with the attribute `plans_per_thread = True` on its callable (anchors.py: cuDNN only).
"""
from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

LANES_AT_MOST = 8          # cuDNN's builds are CPU work; the H200 machine has 16 cores, CI 2
CHUNK_PER_LANE = 4         # scenarios prepared at once: 32 on the H200, at most ~1.6 s each even if serialised


def uses_plans(anchor) -> bool:
    return bool(getattr(anchor, "plans_per_thread", False))


def lane_count() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(LANES_AT_MOST, cores - 1))


class PlanLanes:
    """Owner lanes for the plan-keeping anchors of one worker run.

    first_call(name, anchor, s) makes one untimed call of `anchor` on shape `s` and waits until the device is done
    (the worker passes one that allocates inputs of that shape). needs(name, s) says whether `s` will be timed
    afresh for that anchor (not cached)."""

    def __init__(self, anchors: dict, scenarios: list, first_call: Callable, needs: Callable[[str, object], bool],
                 lanes: Optional[int] = None, stream_of: Optional[Callable] = None):
        self.names = [n for n, anchor in anchors.items() if uses_plans(anchor)]
        self.anchors = anchors
        self.scenarios = list(scenarios)
        self.first_call, self.needs = first_call, needs
        self.lane_n = lanes or lane_count()
        self.stream_of = stream_of                   # () -> a context manager: the main thread's stream, or None
        self.owner: dict[tuple[str, str], int] = {}  # (anchor, scenario key) -> the lane that holds its plan
        self.tried: set[tuple[str, str]] = set()     # prepared or failed there: never prepared twice
        self.lanes: list[ThreadPoolExecutor] = []
        self.build_s: dict[str, float] = {}          # seconds of first calls per anchor (inside the lanes)

    def active(self) -> bool:
        return bool(self.names)

    def _lanes(self) -> list[ThreadPoolExecutor]:
        if not self.lanes:
            self.lanes = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"plan-lane-{i}")
                          for i in range(self.lane_n)]
        return self.lanes

    def _wanted(self, start: int) -> list[tuple[str, object]]:
        """(anchor, scenario) pairs of the chunk that begins at scenario index `start` still to prepare."""
        out, chosen = [], set()
        for s in self.scenarios[start:]:
            if len(out) >= self.lane_n * CHUNK_PER_LANE:
                break
            for name in self.names:
                pair = (name, s.key)          # two scenarios of one shape share a plan
                if pair not in self.tried and pair not in chosen and self.needs(name, s):
                    chosen.add(pair)
                    out.append((name, s))
        return out

    def prepare(self, s) -> dict[str, float]:
        """Before the anchors of `s` are timed: when its plans are not prepared yet, the first calls of this chunk
        (s and the scenarios after it) in the lanes, all finished on return. Returns {anchor: wall seconds} spent
        here (split by each anchor's share of the lanes' time), {} when nothing was to do."""
        if not self.names or all((n, s.key) in self.tried or not self.needs(n, s) for n in self.names):
            return {}
        index = next((i for i, x in enumerate(self.scenarios) if x.key == s.key), None)
        todo = self._wanted(index) if index is not None else [(n, s) for n in self.names if self.needs(n, s)]
        if not todo:
            return {}
        start = time.perf_counter()
        work: queue.Queue = queue.Queue()
        for pair in todo:
            work.put(pair)
            self.tried.add((pair[0], pair[1].key))
        lock, built, errors = threading.Lock(), {n: 0.0 for n in self.names}, []

        def drain(lane: int) -> None:         # shapes are taken as lanes come free: the chunk stays balanced
            while True:
                try:
                    name, shape = work.get_nowait()
                except queue.Empty:
                    return
                t0 = time.perf_counter()
                try:
                    self.first_call(name, self.anchors[name], shape)
                except Exception as err:      # refused here: that shape is timed (and judged) in the main thread
                    if "CUDA error" in str(err) or "illegal" in str(err):
                        with lock:
                            errors.append(err)
                        return
                    continue
                with lock:
                    self.owner[(name, shape.key)] = lane
                    built[name] += time.perf_counter() - t0

        lanes = self._lanes()
        for future in [lane.submit(drain, i) for i, lane in enumerate(lanes)]:
            future.result()
        if errors:
            raise errors[0]                   # a fault poisons the context: the worker reports and stops
        wall = time.perf_counter() - start
        total = sum(built.values())
        for name, seconds in built.items():
            self.build_s[name] = self.build_s.get(name, 0.0) + seconds
        share = {n: wall * (built[n] / total if total else 1.0 / len(self.names)) for n in self.names}
        return {n: v for n, v in share.items() if v > 0}

    def run(self, name: str, s, call: Callable[[], object]):
        """call() in the lane that holds the plan of (name, s), the caller waiting for it; else here."""
        lane = self.owner.get((name, s.key))
        if lane is None:
            return call()
        context = self.stream_of() if self.stream_of is not None else None

        def in_lane():
            if context is None:
                return call()
            with context:
                return call()
        return self.lanes[lane].submit(in_lane).result()

    def close(self) -> None:
        for lane in self.lanes:
            lane.shutdown(wait=True)
        self.lanes = []


def for_worker(anchors: dict, job: dict, problem, cache, device: str) -> PlanLanes:
    """The lanes of a worker run: anchors {name: (callable, version)}, the job's scenarios, a shape needing its
    timing when the timing cache (timing_cache.py) has none for it."""
    import torch

    from workbench.harness.timing_cache import anchor_impl
    from workbench.harness.verify import synchronize

    versions = {name: version for name, (_, version) in anchors.items()}

    def first_call(name: str, anchor, s) -> None:     # one untimed call on inputs of the shape: it builds the plan
        x = problem.judge.Inputs.allocate(s, device)
        x.fill(1)
        anchor(x, s)
        synchronize(device)

    def stream_of():                                   # the caller's stream, entered in the lane
        return torch.cuda.stream(torch.cuda.current_stream())

    return PlanLanes({name: anchor for name, (anchor, _) in anchors.items()},
                     [problem.definition.scenario(raw) for raw in job.get("scenarios", [])], first_call,
                     lambda name, s: cache.get(anchor_impl(name, versions[name]), s) is None,
                     stream_of=stream_of if device.startswith("cuda") else None)
