import dataclasses
import json
import time

import pytest
import torch

from workbench.harness import cpu_device
from workbench.harness.result import Stats
from workbench.harness.scenarios import load_suite
from workbench.harness.timing import (EVENTS_DELAYED, GRAPH_REPLAY, MIN_TARED_US, TIMING_VERSION, CaptureFailed,
                                      Timer, TimingConfig, tared)
from workbench.harness.timing_cache import TimingCache


def test_stats_from_samples():
    s = Stats.from_samples([10.0, 12.0, 11.0, 13.0, 9.0])
    assert s.median_us == 11.0 and s.n == 5 and s.p10_us == pytest.approx(9.4) and s.p90_us == pytest.approx(12.6)
    assert s.rel_stderr == pytest.approx((2.5 / 5) ** 0.5 / 11.0)
    with pytest.raises(ValueError):
        Stats.from_samples([])


def test_timer_stops_on_time_cap_and_rotates_sets():
    seen = []     # a short call (5 of it are far under an eighth of the cap): every input set takes its turn
    cfg = TimingConfig(min_reps=5, max_reps=1000, target_rel_stderr=0.0, time_cap_s=0.2, warmup=1, input_sets=3)
    stats = Timer("cpu", cfg).time(lambda i: (seen.append(i), time.sleep(0.001)), n_sets=3)
    assert 3 <= stats.n < 1000 and stats.median_us > 900 and stats.n * stats.mean_us * 1e-6 >= 0.2
    assert set(seen) == {0, 1, 2}


def test_timer_stops_when_stderr_is_small():
    cfg = TimingConfig(min_reps=5, max_reps=1000, target_rel_stderr=0.5, time_cap_s=10, warmup=0)
    stats = Timer("cpu", cfg).time(lambda i: time.sleep(0.001))
    assert stats.n == 5


def test_the_event_pairs_tare_comes_off_every_reading_and_never_below_the_floor():
    assert tared(10.0, 1.5) == pytest.approx(8.5)
    assert tared(1.2, 1.5) == MIN_TARED_US and tared(3.0, 0.0) == 3.0
    assert Timer("cpu", TimingConfig()).tare_us is None     # measured on first in-graph use, only on a GPU


# ---- device time: graph replay, the fallback, call_us (CPU stand-ins of the CUDA path) --------------------
FAST = TimingConfig(min_reps=5, max_reps=8, target_rel_stderr=0.0, time_cap_s=10, warmup=1, input_sets=2,
                    call_samples=3)


def test_a_capturable_call_is_timed_by_graph_replay_and_its_call_time_kept_apart():
    calls, modes = [], []

    def launch(i):
        calls.append(i)
        modes.append("capture" if cpu_device.capturing() else "replay" if cpu_device.replaying() else "call")
        time.sleep(0.001)
        return 0

    timer = Timer("cpu", FAST)
    stats = timer.time(launch, n_sets=2)
    assert stats.method == GRAPH_REPLAY and stats.note == "" and stats.n == 8
    assert stats.call_us is not None and stats.call_us > 900
    # warm-up 1 + call samples 3 plain calls, one capture per input set, then only replays (2 untimed + 8 timed)
    assert modes == ["call"] * 4 + ["capture"] * 2 + ["replay"] * 10
    assert set(calls[-8:]) == {0, 1}
    assert timer.last["method"] == GRAPH_REPLAY and len(timer.last["call_us"]) == 3


def test_a_checked_implementation_is_primed_by_an_untimed_replay_before_each_sample():
    events = []

    def launch(i):
        events.append(("replay" if cpu_device.replaying() else "capture" if cpu_device.capturing() else "call", i))
        return 0

    timer = Timer("cpu", FAST)
    stats = timer.time(launch, before=lambda i: events.append(("before", i)), n_sets=2,
                       after=lambda i: events.append(("after", i)), prime=True)
    assert stats.n == 8 and timer.last["primed"] == 8
    timed = events[events.index(("capture", 1)) + 7:]    # past the two untimed upload samples (3 events each)
    assert len(timed) == 40
    # every timed replay follows an untimed one of its own set, each after its own before(i) (new contents, poison)
    for k in range(8):
        i = k % 2
        assert timed[5 * k: 5 * k + 5] == [("before", i), ("replay", i), ("before", i), ("replay", i), ("after", i)]
    plain = Timer("cpu", FAST)
    plain.time(launch, n_sets=2)
    assert plain.last["primed"] == 0
    long_calls = Timer("cpu", dataclasses.replace(FAST, prime_below_us=0.0))   # every call reads longer than 0 us
    long_calls.time(launch, n_sets=2, after=lambda i: None, prime=True)
    assert long_calls.last["primed"] == 0


def test_an_anchor_returning_tensors_is_not_an_error_code():
    stats = Timer("cpu", FAST).time(lambda i: (torch.zeros(2), None))
    assert stats.method == GRAPH_REPLAY


@pytest.mark.parametrize("why,launch", [
    ("synchronize", lambda i: cpu_device.synchronize()),
    ("another stream", lambda i: cpu_device.launch_async(lambda: None)),
    ("error code 7", lambda i: 7 if cpu_device.capturing() else 0),
    ("refused", lambda i: (_ for _ in ()).throw(RuntimeError("refused in capture")) if cpu_device.capturing() else 0),
])
def test_a_call_that_cannot_be_captured_falls_back_cleanly_and_says_why(why, launch):
    timer = Timer("cpu", FAST)
    stats = timer.time(launch, n_sets=2)
    assert stats.method == EVENTS_DELAYED and why in stats.note and stats.note.startswith("not graph-capturable")
    assert stats.n == 8 and stats.call_us is not None
    assert not cpu_device.capturing() and not cpu_device.replaying()   # nothing of the failed capture is left
    cpu_device.synchronize()                                            # ... and the device is usable
    # the next implementation timed by the same Timer is captured again
    assert timer.time(lambda i: 0).method == GRAPH_REPLAY


def test_a_failed_capture_raises_capture_failed_and_leaves_no_capture_mode():
    with pytest.raises(CaptureFailed, match="synchronize"):
        Timer("cpu", FAST)._capture(lambda i: cpu_device.synchronize(), 0)
    assert not cpu_device.capturing()


def test_every_replay_is_checked_by_after():
    """The output check runs after every call and replay: a call captured lazy is seen on each replay."""
    captured_lazy, checked = [], []

    def lazy_when_captured(i):
        if cpu_device.capturing():
            captured_lazy.append(i)     # what a replay will run from now on
        return 0

    def after(i):
        checked.append("lazy" if captured_lazy and cpu_device.capturing() is False else "ok")

    Timer("cpu", FAST).time(lazy_when_captured, n_sets=2, after=after)
    assert checked == ["ok"] * (1 + 3) + ["lazy"] * (2 + 8)     # no replay goes unchecked


def test_timing_cache_key_carries_the_timing_method(tmp_path):
    s = load_suite("smoke")[0]
    cache = TimingCache(tmp_path, "gpu", {"torch": "t", "cuda_runtime": "c"})
    stats = Stats(10.0, 9.0, 11.0, 10.0, 0.1, 5, method=GRAPH_REPLAY, call_us=80.0)
    cache.put("fa3|v", s, stats)
    cache.flush()
    again = TimingCache(tmp_path, "gpu", {"torch": "t", "cuda_runtime": "c"}).get("fa3|v", s)
    assert again == stats and again.method == GRAPH_REPLAY and again.call_us == 80.0
    (key,) = json.loads((tmp_path / "timing_cache.json").read_text())
    assert key.endswith(f"|timing {TIMING_VERSION}")
    # a figure cached before device timing (the same key without the method) is never returned
    old_key = key.rsplit(f"|timing {TIMING_VERSION}", 1)[0]
    (tmp_path / "timing_cache.json").write_text(json.dumps({old_key: {"stats": {**stats.__dict__, "median_us": 77.0,
                                                                               "method": ""}, "extra": {}}}))
    assert TimingCache(tmp_path, "gpu", {"torch": "t", "cuda_runtime": "c"}).get("fa3|v", s) is None


def test_stats_from_before_device_timing_still_load():
    old = {"median_us": 5.0, "p10_us": 4.0, "p90_us": 6.0, "mean_us": 5.0, "stderr_us": 0.1, "n": 5}
    s = Stats(**old)
    assert s.method == "" and s.call_us is None and s.note == ""


# ---- the device-time proof's second instrument (WORKBENCH_TIMING_PROFILE) ------------------------------------
def test_profiled_replays_follow_the_samples_in_their_state_and_stay_out_of_the_figure():
    events = []

    def launch(i):
        events.append(("replay" if cpu_device.replaying() else "capture" if cpu_device.capturing() else "call", i))
        return 0

    timer = Timer("cpu", dataclasses.replace(FAST, profile_samples=3))
    stats = timer.time(launch, before=lambda i: events.append(("before", i)), n_sets=2,
                       after=lambda i: events.append(("after", i)), prime=True)
    assert stats.n == 8                                   # the profiled replays are not samples
    # after the 8 timed samples (5 events each): 3 more, primed and checked exactly like a sample
    timed = events[events.index(("capture", 1)) + 7:]
    profiled = timed[40:55]
    for k in range(3):
        i = k % 2
        assert profiled[5 * k: 5 * k + 5] == [("before", i), ("replay", i), ("before", i), ("replay", i), ("after", i)]
    # then the diagnosis patterns, 6 replays each: bare, before only, before + after, bare again
    patterns = timed[55:]
    assert patterns[:6] == [("replay", k % 2) for k in range(6)]
    assert patterns[6:18] == [e for k in range(6) for e in (("before", k % 2), ("replay", k % 2))]
    assert patterns[18:36] == [e for k in range(6) for e in (("before", k % 2), ("replay", k % 2), ("after", k % 2))]
    assert patterns[36:] == [("replay", k % 2) for k in range(6)]
    assert set(stats.profile_detail) == {"bare", "before", "checked", "bare_again"}
    assert stats.profiled_us is None                      # the CPU has no device profiler: nothing is invented
    unprofiled = Timer("cpu", FAST).time(launch)
    assert unprofiled.profiled_us is None and unprofiled.profile_detail is None


def test_the_profile_switch_is_a_small_count_or_a_clear_error():
    from workbench.harness.timing_proof import PROFILE_ENV, profile_samples_from_env

    assert profile_samples_from_env({}) == 0 and profile_samples_from_env({PROFILE_ENV: " 3 "}) == 3
    for bad in ("abc", "-1", "21", "2.5"):
        with pytest.raises(ValueError, match=f"{PROFILE_ENV}=.*e.g. 3"):
            profile_samples_from_env({PROFILE_ENV: bad})
