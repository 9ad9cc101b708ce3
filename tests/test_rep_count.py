"""The rep count follows the spread and the cost: synthetic sample streams into rep_count, and the timer's calls
counted on the CPU (no clock thresholds: every sleep is far past the bound it has to cross)."""
import itertools
import random
import time

from workbench.harness import cpu_device, rep_count
from workbench.harness.timing import Timer, TimingConfig

CFG = TimingConfig()            # problem.toml's shape: 5 reps min, 100 max, 1 % target, 0.4 s cap


def taken(stream, cfg=CFG, witness=None) -> int:
    """How many samples of `stream` the rule takes before it says enough."""
    samples = []
    for x in stream:
        if rep_count.enough_samples(samples, cfg, witness_us=witness):
            break
        samples.append(x)
    return len(samples)


def noisy(mean_us: float, rel: float, seed: int = 1):
    rng = random.Random(seed)
    return (mean_us * (1 + rng.gauss(0, rel)) for _ in itertools.count())


def test_a_short_steady_call_keeps_min_reps():
    assert taken(itertools.repeat(10.0)) == CFG.min_reps
    assert taken(itertools.repeat(2000.0)) == CFG.min_reps            # 2 ms: 5 of it are 10 ms, still short


def test_a_short_noisy_call_takes_more_samples_the_noisier_it_is():
    quiet, loud = taken(noisy(10.0, 0.01)), taken(noisy(10.0, 0.05))
    assert CFG.min_reps <= quiet < loud <= CFG.max_reps
    assert taken(noisy(10.0, 0.5)) == CFG.max_reps                     # never settles: the rep limit ends it


def test_a_long_call_needs_one_or_two_samples_when_steady():
    assert rep_count.is_long(20_000.0, CFG) and not rep_count.is_long(5_000.0, CFG)
    assert taken(itertools.repeat(30_000.0)) == 2                      # two that agree
    assert taken(itertools.repeat(30_000.0), witness=30_100.0) == 1    # one that agrees with its upload replay
    assert taken(itertools.repeat(30_000.0), witness=36_000.0) == 2    # ... not when the witness disagrees


def test_a_long_noisy_call_samples_on_until_the_spread_settles_or_the_cap_is_spent():
    n = taken(itertools.cycle([30_000.0, 36_000.0]))                   # 18 % apart: never under 1 %
    assert n == 13                                                      # 6 x 66 ms + 30 ms: 0.4 s spent, then stop
    settling = [30_000.0, 31_800.0, 30_600.0, 30_900.0, 30_700.0] + [30_800.0] * 10   # 6 % apart, then closer
    assert taken(settling) == 5                                         # std-err 2.9, 1.7, 1.2, then 0.95 %


def test_a_call_longer_than_the_cap_is_timed_once():
    assert taken(itertools.repeat(500_000.0)) == 1
    assert taken(itertools.cycle([250_000.0, 300_000.0])) == 2


def test_plain_calls_stop_after_one_long_call_and_input_sets_follow_the_cost():
    assert rep_count.more_plain_calls([], 2, CFG) and not rep_count.more_plain_calls([], 0, CFG)
    assert rep_count.more_plain_calls([100.0], 5, CFG) and not rep_count.more_plain_calls([100.0] * 5, 5, CFG)
    assert not rep_count.more_plain_calls([30_000.0], 5, CFG)
    assert rep_count.input_sets(100.0, CFG, 2) == 2 and rep_count.input_sets(30_000.0, CFG, 2) == 1


def counting_launch(seconds: float, log: list):
    def launch(i):
        log.append(("capture" if cpu_device.capturing() else "replay" if cpu_device.replaying() else "call", i))
        time.sleep(seconds)
        return 0
    return launch


def test_the_timer_calls_a_long_kernel_a_handful_of_times_on_one_input_set():
    # 60 ms a call against a 50 ms cap: long, and one sample spends the cap whatever the machine's load
    cfg = TimingConfig(min_reps=5, max_reps=100, target_rel_stderr=0.01, time_cap_s=0.05, warmup=2, input_sets=2,
                       call_samples=5)
    log = []
    timer = Timer("cpu", cfg)
    stats = timer.time(counting_launch(0.06, log), n_sets=2)
    assert stats.n == 1 and stats.median_us >= 60_000 and timer.last["witness"] == "plain call"
    # one warm-up call, one call_us call, the CPU capture (which runs the call), one sample: the graph is uploaded
    # without a run (graph_capture.upload; nothing to upload on the CPU) and the plain call is the sample's witness;
    # before issue 24: 1 + 1 + 2 captures + 2 uploads + 3 samples
    assert log == [("call", 0), ("call", 0), ("capture", 0), ("replay", 0)]
    log.clear()
    stats = Timer("cpu", cfg).time(counting_launch(0.06, log), n_sets=2, warm_call_us=61_000.0)
    assert log == [("capture", 0), ("replay", 0)] and stats.call_us == 61_000.0


def test_a_short_warm_call_hint_changes_nothing():
    cfg = TimingConfig(min_reps=3, max_reps=3, target_rel_stderr=0.0, time_cap_s=10, warmup=1, input_sets=2,
                       call_samples=2)
    log = []
    Timer("cpu", cfg).time(counting_launch(0.0, log), n_sets=2, warm_call_us=5.0)
    assert [kind for kind, _ in log].count("call") == 1 + 2 and {i for _, i in log} == {0, 1}


# ---- WORKBENCH_TIMING_RULES=fixed: the rules before issue 24, for an A/B of the device-time proof ----------
FIXED = TimingConfig(rules=rep_count.FIXED)


def old_sample_count(stream, cfg) -> int:
    """The sample loop of timing.py before issue 24 (commit dc4bf8b), verbatim but for the sample source."""
    from workbench.harness.result import Stats
    samples, spent_s = [], 0.0
    while len(samples) < cfg.max_reps:
        us = next(stream)
        samples.append(us)
        spent_s += us * 1e-6
        n = len(samples)
        if n >= 3 and spent_s >= cfg.time_cap_s:
            break
        if n >= cfg.min_reps and Stats.from_samples(samples).rel_stderr < cfg.target_rel_stderr:
            break
    return len(samples)


def test_the_fixed_rules_take_the_samples_the_old_loop_took():
    streams = [lambda: itertools.repeat(10.0), lambda: itertools.repeat(30_000.0), lambda: itertools.repeat(500_000.0),
               lambda: noisy(10.0, 0.05), lambda: noisy(10.0, 0.3, seed=2), lambda: noisy(40_000.0, 0.02, seed=3)]
    for make in streams:
        for cfg in (FIXED, TimingConfig(rules=rep_count.FIXED, min_reps=1, max_reps=7, target_rel_stderr=0.0)):
            assert taken(make(), cfg) == old_sample_count(make(), cfg)
    assert taken(itertools.repeat(30_000.0), FIXED) == 5 and taken(itertools.repeat(30_000.0)) == 2   # no witness
    for make in streams[:1] + streams[3:5]:              # a short call (02_mma's 6 us): the cost-sized rules agree
        assert taken(make(), CFG) == taken(make(), FIXED)
    assert all(rep_count.more_plain_calls(done, 5, CFG) == rep_count.more_plain_calls(done, 5, FIXED)
               for done in ([], [80.0], [80.0] * 4, [80.0] * 5))


def test_the_fixed_rules_time_a_long_kernel_as_before_issue_24():
    cfg = TimingConfig(min_reps=5, max_reps=100, target_rel_stderr=0.01, time_cap_s=0.05, warmup=2, input_sets=2,
                       call_samples=5, rules=rep_count.FIXED)
    log = []
    stats = Timer("cpu", cfg).time(counting_launch(0.06, log), n_sets=2, warm_call_us=61_000.0)
    # the comment of the cost-sized test above: 1 + 1 + 2 captures + 2 uploads + 3 samples; the hint is ignored
    assert log == [("call", 0), ("call", 0), ("capture", 0), ("capture", 1), ("replay", 0), ("replay", 1),
                   ("replay", 0), ("replay", 1), ("replay", 0)]
    assert stats.n == 3 and stats.call_us != 61_000.0


def test_the_rules_switch_is_one_of_two_names_or_a_clear_error(tmp_path, monkeypatch):
    import pytest

    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest
    from workbench.harness.scenarios import SuiteError

    assert rep_count.rules_from_env({}) == rep_count.COST_SIZED
    assert rep_count.rules_from_env({rep_count.RULES_ENV: " fixed "}) == rep_count.FIXED
    monkeypatch.setenv(rep_count.RULES_ENV, "old")
    with pytest.raises(SuiteError, match="WORKBENCH_TIMING_RULES='old'"):
        check(CheckRequest(kernel_path="standin:correct", suite="smoke", cache_dir=str(tmp_path / "cache")))
    assert not (tmp_path / "cache").exists()           # refused before any work
