"""An anchor that builds a plan per shape and keeps it per thread (cuDNN's SDPA through torch) is prepared in
parallel lanes before its timings, timed in the lane that holds its plan, and never while other work runs
(workbench/harness/anchor_plans.py; the H200's cold `full` spent ~160 s in these first calls, one at a time)."""
import threading
import time

import pytest

from workbench.harness import anchor_plans
from workbench.harness.problem import Problem
from workbench.harness.result import Stats
from workbench.harness.scenarios import Scenario
from workbench.harness.standins import STANDINS, _attention
from workbench.harness.timing import Timer
from workbench.harness.timing_cache import TimingCache, anchor_impl
from workbench.harness.worker import ScenarioRun


class Log:
    """What ran, in order, from any thread: ('build'|'call'|'kernel', thread name, shape key, in flight)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries: list = []
        self.building = 0            # first calls in flight right now

    def add(self, *entry):
        with self.lock:
            self.entries.append((*entry, self.building))


class PlanAnchor:
    """A stand-in for cuDNN's SDPA: its first call of a shape in a thread builds a plan (slow), kept per thread."""
    plans_per_thread = True

    def __init__(self, log: Log, build_s: float = 0.05, barrier: threading.Barrier | None = None):
        self.log, self.build_s, self.barrier = log, build_s, barrier
        self.local = threading.local()

    def __call__(self, x, s):
        plans = self.local.__dict__.setdefault("plans", set())
        if s.key not in plans:
            with self.log.lock:
                self.log.building += 1
            self.log.add("build", threading.current_thread().name, s.key)
            if self.barrier is not None:
                self.barrier.wait()       # two builds at once, or BrokenBarrierError after its timeout
            time.sleep(self.build_s)
            plans.add(s.key)
            with self.log.lock:
                self.log.building -= 1
        else:
            self.log.add("call", threading.current_thread().name, s.key)
        return _attention(x, s)


def _scenarios(n: int) -> list[Scenario]:
    return [Scenario(f"p{i}", 1, 2, 2, 32 + 16 * i, 32 + 16 * i, 64, bool(i % 2)) for i in range(n)]


def _runner(tmp_path, log: Log, anchor, scenarios, lanes=None):
    problem = Problem.load("attn_fwd")
    problem.timing.time_cap_s, problem.timing.max_reps = 20.0, 6      # short calls on any load (rep_count.py)
    job = {"device": "cpu", "request": {"timing": True}, "scenarios": [s.to_dict() for s in scenarios],
           "candidate": {"kind": "standin", "path": "correct", "sha": "c" * 64},
           "baseline": {"kind": "standin", "path": "correct", "sha": "b" * 64}}
    cache = TimingCache(tmp_path / "cache", "cpu", {})
    runner = ScenarioRun(job, problem, Timer("cpu", problem.timing), cache, {"plan": (anchor, "v1")}, fresh_seed=7)
    if lanes:
        runner.plans = anchor_plans.for_worker(runner.anchors, job, problem, cache, "cpu")
        runner.plans.lane_n = lanes

    def kernel(*a):
        log.add("kernel", threading.current_thread().name, a[-1].key)
        return STANDINS["correct"](*a)
    return runner, kernel, cache


def test_each_shape_is_built_once_in_a_lane_before_its_timing_and_timed_there(tmp_path):
    log = Log()
    scenarios = _scenarios(5)
    runner, kernel, _ = _runner(tmp_path, log, PlanAnchor(log), scenarios)
    for s in scenarios:
        result = runner.run(s, kernel, kernel)
        assert result.status == "passed" and "plan" in result.reference_stats, result.detail
    runner.plans.close()
    builds = [e for e in log.entries if e[0] == "build"]
    assert sorted(e[2] for e in builds) == sorted(s.key for s in scenarios)     # once per shape, all of them
    main = threading.main_thread().name
    assert all(e[1] != main for e in builds)                     # in the lanes, not the worker's main thread
    owner = {e[2]: e[1] for e in builds}
    calls = [e for e in log.entries if e[0] == "call"]
    assert calls and all(e[1] == owner[e[2]] for e in calls)     # every later call found its plan: its lane's


def test_no_other_work_runs_while_a_lane_builds(tmp_path):
    log = Log()
    scenarios = _scenarios(4)
    runner, kernel, _ = _runner(tmp_path, log, PlanAnchor(log), scenarios)
    for s in scenarios:
        runner.run(s, kernel, kernel)
    runner.plans.close()
    # the candidate's and the baseline's calls, and every timed call of the anchor, find no first call in flight
    assert [e for e in log.entries if e[0] in ("kernel", "call") and e[3]] == []


def test_first_calls_of_a_chunk_run_in_parallel_lanes(tmp_path):
    log = Log()
    scenarios = _scenarios(4)
    anchor = PlanAnchor(log, barrier=threading.Barrier(2, timeout=60))   # passes only if two build at once
    runner, kernel, _ = _runner(tmp_path, log, anchor, scenarios, lanes=2)
    spent = runner.plans.prepare(scenarios[0])
    runner.plans.close()
    assert len({e[1] for e in log.entries if e[0] == "build"}) == 2 and len(runner.plans.owner) == 4
    assert spent["plan"] > 0                                      # the chunk's wall time, reported as the anchor's


def test_a_cached_shape_is_not_built_and_a_refused_one_is_timed_in_the_main_thread(tmp_path):
    log = Log()
    scenarios = _scenarios(3)
    plain = PlanAnchor(log)

    def picky(x, s):                  # refuses one shape in a lane (its first call there fails)
        if s.key == scenarios[2].key and threading.current_thread() is not threading.main_thread():
            raise ValueError("not in a lane")
        return plain(x, s)
    picky.plans_per_thread = True
    runner, kernel, cache = _runner(tmp_path, log, picky, scenarios)
    cache.put(anchor_impl("plan", "v1"), scenarios[1], Stats.from_samples([10.0]))   # an earlier run timed it
    for s in scenarios:
        assert runner.run(s, kernel, kernel).status == "passed"
    runner.plans.close()
    built = [e[:3] for e in log.entries if e[0] == "build"]
    assert scenarios[1].key not in [e[2] for e in built]           # cached: no first call made for it
    assert ("build", threading.main_thread().name, scenarios[2].key) in built   # timed (and built) as before


@pytest.mark.parametrize("name,expected", [("cudnn", True), ("fa2", False)])
def test_only_cudnn_keeps_plans_per_thread(name, expected):
    from workbench.harness.anchors import LOADERS
    try:
        anchor, _ = LOADERS[name]()
    except Exception as err:          # torch without the SDPA backends' Python side
        pytest.skip(f"cannot load {name}: {err}")
    assert anchor_plans.uses_plans(anchor) is expected
