"""The baseline's (the original kernel's) part in one scenario, as much as its role needs and no more: its output
rows on the first fixed seed, which `mismatch_original` compares a candidate with, and its device time, which
speedups divide by. Both are cached (timing_cache.py), so each is paid once per GPU and version.

The baseline is trusted, not judged: it is not verified as a candidate (no second seed, no repeat for
determinism, no x16 inputs; `workbench warm` compares its rows with the fp32 reference once). Its *first call*
on a scenario does three jobs: it is the call recorded for the foreign-kernel check (own_kernels.py), its
sampled rows are the comparison rows, and when it is long it is also the warm-up and the `call_us` of its timing
(Timer.time's warm_call_us) and the witness of its first sample. For the fp32 original on large shapes a
scenario then costs that call and one or two samples, its graph uploaded without a run (rep_count.py), where it
cost about twelve calls before issue 24 and three (the call, an upload replay, a sample) after its first cut. A
call predicted longer than the timer's cap is one execution: its first call is made as its one timed sample, a
recorded graph replay whose output gives the rows (first_replay.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from workbench.harness import first_replay
from workbench.harness.result import Stats
from workbench.harness.scenarios import Scenario
from workbench.harness.timing_cache import original_impl
from workbench.harness.verify import default_judge, original_mismatch, rows_for_seed


@dataclass
class FirstCall:
    rc: int
    foreign: Optional[str]          # a detail line when it ran kernels not its own
    wall_us: Optional[float]        # kernel + synchronize
    stats: Optional[Stats] = None   # the call was also its one timed sample (first_replay.py)
    seconds: float = 0.0            # what making it took (the call, its recording, a capture)


@dataclass
class BaselineTiming:
    stats: Optional[Stats] = None
    foreign: Optional[str] = None   # the baseline ran a foreign kernel: the scenario fails
    refused: str = ""               # the baseline refused the shape: no speedup there


class BaselineRole:
    def __init__(self, job: dict, tol, cache, own, device: str, judge=None, timer=None, shapes=()):
        self.job, self.tol, self.cache, self.own, self.device = job, tol, cache, own, device
        self.timer, self.shapes = timer, list(shapes)     # for first_replay: the timer, the run's scenarios
        self.judge = judge or default_judge()
        self.first: dict[str, FirstCall] = {}     # scenario key -> the first call made for its rows
        self.spent_s = 0.0                        # seconds of baseline timing in the current scenario
        self.rows_s = 0.0                         # seconds of a first call made for the rows alone (timing cached)

    @property
    def spec(self) -> Optional[dict]:
        return self.job.get("baseline")

    def compares(self) -> bool:
        """Whether candidates are compared with this baseline's rows (there is one, and it is not the candidate)."""
        return self.spec is not None and not self.is_candidate()

    def is_candidate(self) -> bool:
        candidate = self.job.get("candidate")
        return bool(candidate and self.spec and self.spec["sha"] == candidate["sha"])

    def _rows_key(self, s: Scenario, seed: int, rows: int) -> str:
        return f"original-rows|{self.spec['sha'][:16]}|{s.key}|{seed}|{rows}|{self.cache.gpu}"

    def preload_rows(self, scenarios: list[Scenario]) -> int:
        """Read the cached comparison rows of these scenarios now, while the worker can still read the cache."""
        if self.spec is None or self.is_candidate():
            return 0
        seed = self.tol.seeds[0]
        count = lambda s: len(rows_for_seed(s, self.tol, seed, self.judge)[: self.tol.original_rows])
        return self.cache.preload(self._rows_key(s, seed, count(s)) for s in scenarios)

    def _first_call(self, baseline, s: Scenario, x, out) -> FirstCall:
        start = time.perf_counter()
        rc, foreign = self.own.baseline(baseline, s, x, out)
        return FirstCall(rc=rc, foreign=foreign, wall_us=self.own.last_call_us, seconds=time.perf_counter() - start)

    def _replayed_first(self, baseline, s: Scenario, x, out) -> Optional[FirstCall]:
        """The first call made as the one timed sample of a call predicted longer than the cap (first_replay.py);
        None where it is not made so (then the plain first call is)."""
        impl = original_impl(self.spec["sha"])
        if (self.timer is None or not self.job.get("request", {}).get("timing", True)
                or self.cache.get(impl, s) is not None):
            return None
        if not first_replay.worth_it(self.timer, first_replay.predicted_us(lambda shape: self.cache.get(impl, shape),
                                                                           self.shapes, s)):
            return None
        start = time.perf_counter()
        record = self.own is not None and self.own.applies(s)
        done = first_replay.first_replay(self.timer, lambda: baseline(x, *out.tensors, s), out.poison, record,
                                         self.device)
        if done is None:
            self.spent_s += time.perf_counter() - start     # a capture (and an upload) that led nowhere
            return None
        foreign = self.own.judge_baseline(done.seen, out, time.perf_counter() - start) if record else None
        return FirstCall(rc=0, foreign=foreign, wall_us=done.wall_us, stats=done.stats,
                         seconds=time.perf_counter() - start)

    def rows(self, s: Scenario, baseline):
        """The baseline's output on the first fixed seed, on a few sampled rows (cached on disk)."""
        if baseline is None or self.spec is None or self.is_candidate():
            return None
        seed = self.tol.seeds[0]
        rows = rows_for_seed(s, self.tol, seed, self.judge)[: self.tol.original_rows]
        key = self._rows_key(s, seed, len(rows))
        cached = self.cache.load_tensor(key)
        if cached is not None:
            return self.judge.Reference.from_cache(cached, self.device)
        x = self.judge.Inputs.allocate(s, self.device)
        x.fill(seed)
        out = self.judge.Outputs(s, self.device, 16)
        out.poison()
        first = self._replayed_first(baseline, s, x, out) or self._first_call(baseline, s, x, out)
        self.first[s.key] = first
        self.rows_s += first.seconds      # the timing's share when it is timed now (timing() moves it there)
        if first.rc:
            return None
        ref = self.judge.reference_from_output(out.tensors, rows)
        self.cache.save_tensor(key, ref.to_cache())
        return ref

    def mismatch(self, s: Scenario, baseline, first_outputs) -> str:
        """'' when a candidate's outputs on the first fixed seed (kept by its verification) are within tolerance of
        this baseline's rows on it (made now when the cache lacks them: after the candidate's timing), else the
        detail line of `mismatch_original`."""
        original = self.rows(s, baseline)
        if original is None or first_outputs is None:
            return ""
        return original_mismatch(self.judge, self.tol, s, first_outputs, original, self.tol.seeds[0])

    def seconds(self) -> tuple[dict, dict]:
        """This scenario's baseline seconds: ({'original': timing work}, {'original': a first call made for the
        rows alone, its timing cached}), each empty where there were none."""
        return ({"original": self.spent_s} if self.spent_s else {},
                {"original": self.rows_s} if self.rows_s > 1e-9 else {})

    def timing(self, s: Scenario, baseline, sets: list, candidate_stats: Optional[Stats],
               time_kernel: Callable) -> BaselineTiming:
        """The baseline's stats on this scenario: cached, the candidate's own (the candidate is the baseline), or
        timed now (and cached). time_kernel(kernel, s, sets, check_outputs, warm_call_us) -> (Stats, problem)."""
        impl = original_impl(self.spec["sha"])
        stats = self.cache.get(impl, s)
        if stats is None and self.is_candidate():
            stats = candidate_stats   # one timing serves both
        if stats is not None:
            self.first.pop(s.key, None)
            return BaselineTiming(stats=stats)
        first = self.first.pop(s.key, None)
        if first is None:        # its rows came from the cache (a new timing version, say): its first call now
            out = self.judge.Outputs(s, self.device, 16)
            first = self._replayed_first(baseline, s, sets[0], out) or self._first_call(baseline, s, sets[0], out)
        else:                    # the rows' first call is this timing's warm call (or its sample): timing work
            self.rows_s = max(0.0, self.rows_s - first.seconds)
        self.spent_s += first.seconds
        if first.foreign:
            return BaselineTiming(foreign=first.foreign)
        if first.rc:   # a user's baseline may refuse a shape: no speedup against it, never a fake one
            return BaselineTiming(refused=f"unsupported: the baseline returned error code {first.rc}")
        if first.stats is not None:      # its first call was its one sample (first_replay.py)
            self.cache.put(impl, s, first.stats)
            return BaselineTiming(stats=first.stats)
        start = time.perf_counter()
        stats, _ = time_kernel(baseline, s, sets, check_outputs=False, warm_call_us=first.wall_us)
        self.spent_s += time.perf_counter() - start
        self.cache.put(impl, s, stats)
        return BaselineTiming(stats=stats)
