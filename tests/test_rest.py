"""The rest before a long call's samples (workbench/harness/rest.py): who rests, how long, and what it names."""
import time

import pytest

from workbench.harness import cpu_device, rest, worker
from workbench.harness.problem import Problem
from workbench.harness.scenarios import load_suite
from workbench.harness.timing import TIMING_VERSION, Timer, TimingConfig
from workbench.harness.timing_cache import cache_env


def test_the_rest_comes_from_the_environment_or_the_problem_and_bad_values_are_one_line_errors():
    assert rest.rest_from_env({}, 0.5) == 0.5
    assert rest.rest_from_env({rest.REST_ENV: " 1.5 "}, 0.0) == 1.5
    assert rest.rest_from_env({rest.REST_ENV: "0"}, 2.0) == 0.0
    for bad in ("soon", "-1", "nan", "11", "inf"):
        with pytest.raises(ValueError) as err:
            rest.rest_from_env({rest.REST_ENV: bad}, 0.0)
        assert rest.REST_ENV in str(err.value) and "\n" not in str(err.value)


def test_only_rows_whose_floor_reaches_the_threshold_rest():
    cfg = TimingConfig(rest_s=0.5, rest_above_floor_us=2000.0)
    assert rest.rest_for_row_s(2000.0, cfg) == 0.5
    assert rest.rest_for_row_s(1999.0, cfg) == 0.0
    assert rest.rest_for_row_s(None, cfg) == 0.0
    assert rest.rest_for_row_s(float("nan"), cfg) == 0.0
    assert rest.rest_for_row_s(1e6, TimingConfig()) == 0.0       # off by default


def test_the_worker_sets_each_rows_rest_from_the_problems_floor_before_anything_of_the_row_is_timed():
    problem = Problem.load()
    problem.timing = TimingConfig(rest_s=0.5, rest_above_floor_us=2000.0)
    full = {s.name: s for s in load_suite("full", problem=problem.definition)}
    long_row, short_row = full["B_h64x8_d128_c1_s32k"], full["C_s100_d128_c1"]
    assert problem.floor_us(long_row) > 20000 and problem.floor_us(short_row) < 20

    class Runner:                 # what scenario_result reads of a ScenarioRun
        def __init__(self):
            self.problem, self.timer, self.seen = problem, Timer("cpu", problem.timing), []

        def run(self, s, candidate, baseline):
            self.seen.append((s.name, self.timer.rest_s))
            return s.name

    runner = Runner()
    for s in (long_row, short_row):
        assert worker.scenario_result(runner, s, candidate=object(), baseline=None) == s.name
    assert runner.seen == [("B_h64x8_d128_c1_s32k", 0.5), ("C_s100_d128_c1", 0.0)]


def test_a_rest_drains_the_queue_before_it_idles():
    events = []
    assert rest.rest(0.25, lambda: events.append("drain"), lambda s: events.append(("sleep", s))) == 0.25
    assert events == ["drain", ("sleep", 0.25)]
    assert rest.rest(0.0, lambda: events.append("drain2"), lambda s: events.append("sleep2")) == 0.0
    assert events == ["drain", ("sleep", 0.25)]


def test_figures_with_a_rest_never_share_a_cache_key_with_figures_without():
    off, on = TimingConfig(), TimingConfig(rest_s=0.5, rest_above_floor_us=2000.0)
    assert rest.timing_label(TIMING_VERSION, off) == TIMING_VERSION
    label = rest.timing_label(TIMING_VERSION, on)
    assert label.startswith(TIMING_VERSION) and "rest0.5s" in label and "floor2000us" in label
    base = {"torch": "2", "cuda_runtime": "13"}
    assert cache_env("H200", base) == cache_env("H200", {**base, "timing": TIMING_VERSION})
    assert cache_env("H200", {**base, "timing": label}) != cache_env("H200", base)


def test_the_timer_rests_once_before_the_samples_of_a_resting_row_and_never_otherwise():
    moments = []      # (replayed?, when it began) of every call the timer makes

    def launch(i):
        moments.append((cpu_device.replaying(), time.monotonic()))
        time.sleep(0.003)
        return 0

    def gap_before_first_sample(n_samples):
        first = len(moments) - n_samples              # the timed samples are the last replays
        assert all(replayed for replayed, _ in moments[first:])
        return moments[first][1] - moments[first - 1][1]

    timer = Timer("cpu", TimingConfig(min_reps=2, max_reps=3, target_rel_stderr=0.0, time_cap_s=10, warmup=0,
                                      call_samples=1, input_sets=1))
    timer.rest_s = 0.2
    stats = timer.time(launch)
    assert timer.last["rested_s"] == 0.2 and gap_before_first_sample(stats.n) >= 0.2

    moments.clear()
    timer.rest_s = 0.0
    stats = timer.time(launch)
    assert timer.last["rested_s"] == 0.0 and gap_before_first_sample(stats.n) < 0.2
