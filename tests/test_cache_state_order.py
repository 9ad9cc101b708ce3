"""A candidate's verification and timing run the same work in every state of the timing cache: full (the baseline's
timings and output rows), timings without the rows (a cache carried without its tensors/), and cold. Counted on
the CPU with the stand-ins: every torch op the harness issues, every kernel call by role, each timed sample.

On the H200 (campaign h200-fa3-race, 2026-12-02) the same kernel read 8.2-9.1 us on C_s100_d64_c0 with a full
cache and 11.5 us (noisy) when the cache lacked the original's rows: the original's first call, made for the rows,
then ran before the candidate's verification and timing, seconds long on the shapes before C_s100. The harness
now makes it after the candidate's timing (worker.ScenarioRun.run), so what precedes a candidate's samples no
longer depends on what the cache holds, and such a first call is reported as rows recomputed, not as a timing."""
import shutil

import pytest
from test_timed_rows import MarkingTimer, OpRecorder

from workbench.harness.problem import Problem
from workbench.harness.progress_cache import ProgressCache, rows_line, summary_line
from workbench.harness.scenarios import load_suite
from workbench.harness.standins import STANDINS
from workbench.harness.timing_cache import TimingCache
from workbench.harness.worker import ScenarioRun

STATES = ("full", "timings_only", "cold")


def _problem() -> Problem:
    """attn_fwd with timing rules that take the same number of calls on any load: 4 samples, always primed."""
    problem = Problem.load("attn_fwd")
    t = problem.timing
    t.time_cap_s, t.min_reps, t.max_reps, t.target_rel_stderr, t.prime_below_us = 1e3, 4, 4, 0.0, 1e12
    return problem


def _run(cache_dir, baseline_name: str = "correct"):
    """One smoke scenario judged on the cache in cache_dir: (result, the log, the runner)."""
    problem = _problem()
    s = load_suite("smoke", problem=problem.definition)[0]
    job = {"device": "cpu", "request": {"timing": True}, "scenarios": [s.to_dict()],
           "candidate": {"kind": "standin", "path": "correct", "sha": "c" * 64},
           "baseline": {"kind": "standin", "path": baseline_name, "sha": "b" * 64}}
    recorder = OpRecorder()

    def own(role: str, name: str):
        def kernel(*a):            # the kernels' own ops are theirs; their calls are marked
            recorder.log.append(("call", role))
            recorder.paused += 1
            try:
                return STANDINS[name](*a)
            finally:
                recorder.paused -= 1
        return kernel

    runner = ScenarioRun(job, problem, MarkingTimer(recorder, "cpu", problem.timing),
                         TimingCache(cache_dir, "cpu", {}), {}, fresh_seed=11)
    with recorder:
        result = runner.run(s, own("candidate", "correct"), own("baseline", baseline_name))
    return result, recorder.log, runner


def _three_states(tmp_path, baseline_name: str = "correct") -> dict:
    """state -> (result, log, runner): the cold run fills a cache, copied whole and without its tensors."""
    runs = {"cold": _run(tmp_path / "cold", baseline_name)}
    shutil.copytree(tmp_path / "cold", tmp_path / "full")
    shutil.copytree(tmp_path / "cold", tmp_path / "timings_only", ignore=shutil.ignore_patterns("tensors"))
    assert list((tmp_path / "cold" / "tensors").glob("*.pt")), "the cold run saved the original's rows"
    for state in ("full", "timings_only"):
        runs[state] = _run(tmp_path / state, baseline_name)
    return runs


def _until_timed(log: list) -> list:
    """Everything from the scenario's start to the end of the candidate's timing (its first time())."""
    return log[: log.index(("time done",)) + 1]


def _gaps(log: list) -> list:
    """What runs between each two timed replays of the candidate (its untimed upload replays, then its samples)."""
    part = log[log.index(("time",)): log.index(("time done",))]
    marks = [k for k, entry in enumerate(part) if entry == ("sample",)]
    return [part[a + 1:b] for a, b in zip(marks, marks[1:])]


def test_the_candidate_is_verified_and_timed_after_the_same_work_in_every_cache_state(tmp_path):
    runs = _three_states(tmp_path)
    for state, (result, log, _) in runs.items():
        assert result.status == "passed" and result.stats is not None, (state, result.reason, result.detail)
        assert result.stats.n == 4, state
    logs = {state: _until_timed(log) for state, (_, log, _) in runs.items()}
    assert ("call", "baseline") not in logs["cold"], "no baseline call before the candidate's timing has ended"
    assert logs["timings_only"] == logs["full"] == logs["cold"]
    gaps = {state: _gaps(log) for state, (_, log, _) in runs.items()}
    assert len(gaps["full"]) >= 4 - 1 and gaps["timings_only"] == gaps["full"] == gaps["cold"]
    full, rows_only = runs["full"][1], runs["timings_only"][1]
    assert ("call", "baseline") not in full                     # rows and timing cached: the baseline never runs
    assert rows_only.count(("call", "baseline")) == 1           # its one call for the rows, after the timing


def test_rows_recomputed_with_the_timing_cached_are_reported_apart_from_timings(tmp_path):
    """The campaign's log said 'timed now original 181 (34.8 s)' for a run that timed nothing of the original and
    only recomputed its rows."""
    runs = _three_states(tmp_path)
    _, _, cold = runs["cold"]
    _, _, rows_only = runs["timings_only"]
    _, _, full = runs["full"]
    assert "original" in cold.spent and "original" not in cold.rows_s      # its first call is its timing's
    assert "original" not in rows_only.spent and rows_only.rows_s["original"] > 0
    assert not full.spent and not full.rows_s
    s = load_suite("smoke", problem=_problem().definition)[0]
    job = {"request": {"timing": True, "anchors": []}, "baseline": {"sha": "b" * 64}, "candidate": {"sha": "c" * 64}}
    progress = ProgressCache(job, [s], tmp_path / "timings_only", None)
    assert progress.start({"gpu": "cpu", "versions": {}, "missing_anchors": {}})
    progress.begin()
    line = progress.done(s.name, rows_only.spent, rows_only.rows_s)
    assert "rows recomputed original" in line and "timed now" not in line, line
    summary = progress.summary()
    assert summary_line(summary) == "timing cache: timed now original 0 (0.0 s); cached before: original 1"
    assert rows_line(summary).startswith("baseline rows: original recomputed for 1 scenarios (")


@pytest.mark.parametrize("state", STATES)
def test_a_candidate_unlike_the_original_still_fails_mismatch_original(tmp_path, state):
    """The comparison with the original's rows moved after the candidate's timing: it still fails the scenario
    (and the candidate's timing is not reported), whether the rows were cached or computed then."""
    runs = _three_states(tmp_path, baseline_name="wrong_scale")
    result, log, _ = runs[state]
    assert result.status == "failed" and result.reason == "mismatch_original", (result.reason, result.detail)
    assert result.stats is None and "original" not in result.reference_stats
    assert "against the original kernel" in result.detail
    if ("call", "baseline") in log:                             # computed now: after the candidate's timing
        assert log.index(("call", "baseline")) > log.index(("time done",))
