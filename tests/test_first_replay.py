"""A baseline call predicted longer than the timer's cap is executed once per scenario: its first call is its one
timed sample, a recorded graph replay whose output gives the comparison rows (workbench/harness/first_replay.py).
On the H200's `full` the original's long calls cost two executions each (the plain first call, then the sample):
0.036 s + 1.98 x its one call per scenario in the logs of 2026-12-02."""
import time

from workbench.harness import cpu_device
from workbench.harness.problem import Problem
from workbench.harness.scenarios import Scenario
from workbench.harness.standins import CUBLAS_GEMM, STANDINS
from workbench.harness.timing import Timer
from workbench.harness.timing_cache import TimingCache
from workbench.harness.worker import ScenarioRun

CAP_S = 0.05          # the timer's cap in these tests: a call of >= 2 x CAP_S is predicted long enough


def _shapes(sizes=(32, 48, 64, 96, 400, 480)) -> list[Scenario]:
    return [Scenario(f"r{i}", 1, 2, 2, q, q, 64, False) for i, q in enumerate(sizes)]


class SleepyBaseline:
    """Correct, and as slow as its flops say (like the fp32 original): counts its executions per shape."""

    def __init__(self, us_per_flop: float, foreign_on: str = ""):
        self.us_per_flop, self.foreign_on = us_per_flop, foreign_on
        self.executions: dict[str, int] = {}

    def __call__(self, x, o, lse, s):
        if not cpu_device.capturing():      # a CPU capture runs the call to judge it; a GPU capture runs nothing
            self.executions[s.name] = self.executions.get(s.name, 0) + 1
        time.sleep(s.flops() * self.us_per_flop * 1e-6)
        if s.name == self.foreign_on:
            cpu_device.report(CUBLAS_GEMM)
        return STANDINS["correct"](x, o, lse, s)


def _run(tmp_path, baseline, shapes=None, cap_s=CAP_S):
    problem = Problem.load("attn_fwd")
    problem.timing.time_cap_s, problem.timing.max_reps = cap_s, 6
    shapes = shapes or _shapes()
    job = {"device": "cpu", "request": {"timing": True}, "scenarios": [s.to_dict() for s in shapes],
           "candidate": {"kind": "standin", "path": "correct", "sha": "c" * 64},
           "baseline": {"kind": "standin", "path": "correct", "sha": "b" * 64}}
    runner = ScenarioRun(job, problem, Timer("cpu", problem.timing), TimingCache(tmp_path / "cache", "cpu", {}),
                         {}, fresh_seed=5)
    return shapes, [runner.run(s, STANDINS["correct"], baseline) for s in shapes]


def test_a_call_predicted_past_the_cap_runs_once_and_is_its_own_sample(tmp_path):
    shapes = _shapes()
    rate = 0.15 / shapes[-1].flops() * 1e6            # the largest call sleeps 0.15 s: 3x the cap
    baseline = SleepyBaseline(rate)
    shapes, rows = _run(tmp_path, baseline)
    assert all(r.status == "passed" for r in rows), [r.detail for r in rows]
    long_ones = [s.name for s in shapes if s.flops() * rate * 1e-6 >= 2 * CAP_S]
    assert long_ones == ["r4", "r5"]
    for name in long_ones:
        assert baseline.executions[name] == 1, baseline.executions     # was 2: the first call, then the sample
        stats = next(r for r in rows if r.name == name).reference_stats["original"]
        assert stats.n == 1 and stats.method == "graph_replay" and stats.median_us >= CAP_S * 1e6
    assert all(baseline.executions[s.name] >= 2 for s in shapes[:3])   # no 3 timings of other shapes yet


def test_a_foreign_kernel_in_the_replayed_first_call_fails_the_scenario(tmp_path):
    shapes = _shapes()
    baseline = SleepyBaseline(0.15 / shapes[-1].flops() * 1e6, foreign_on="r5")
    _, rows = _run(tmp_path, baseline)
    assert baseline.executions["r5"] == 1
    assert rows[-1].status == "failed" and rows[-1].reason == "foreign_kernel", rows[-1].detail
    assert CUBLAS_GEMM in rows[-1].detail


def test_a_call_shorter_than_predicted_is_timed_as_before(tmp_path):
    shapes = _shapes((32, 48, 64, 480))
    rate = 0.02 / shapes[0].flops() * 1e6        # the first three sleep by their flops: 480 predicted at 4.5 s
    baseline = SleepyBaseline(rate)

    def unlike_the_others(x, o, lse, s):          # ... and it takes only what the stand-in's arithmetic takes
        baseline.us_per_flop = 0.0 if s.name == "r3" else rate
        return baseline(x, o, lse, s)
    _, rows = _run(tmp_path, unlike_the_others, shapes, cap_s=1.0)
    last = rows[-1]
    assert last.status == "passed", last.detail
    stats = last.reference_stats["original"]
    assert stats.median_us < 1e6 and stats.n >= 1
    assert baseline.executions["r3"] >= 2        # the replay stood as its first call; the timer took its samples
