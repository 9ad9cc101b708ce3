import time

import pytest

from workbench.harness.result import Stats
from workbench.harness.timing import Timer, TimingConfig


def test_stats_from_samples():
    s = Stats.from_samples([10.0, 12.0, 11.0, 13.0, 9.0])
    assert s.median_us == 11.0 and s.n == 5 and s.p10_us == pytest.approx(9.4) and s.p90_us == pytest.approx(12.6)
    assert s.rel_stderr == pytest.approx((2.5 / 5) ** 0.5 / 11.0)
    with pytest.raises(ValueError):
        Stats.from_samples([])


def test_timer_stops_on_time_cap_and_rotates_sets():
    seen = []
    cfg = TimingConfig(min_reps=5, max_reps=1000, target_rel_stderr=0.0, time_cap_s=0.05, warmup=1, input_sets=3)
    stats = Timer("cpu", cfg).time(lambda i: (seen.append(i), time.sleep(0.005)), n_sets=3)
    assert 3 <= stats.n <= 12 and stats.median_us > 4000
    assert set(seen) == {0, 1, 2}


def test_timer_stops_when_stderr_is_small():
    cfg = TimingConfig(min_reps=5, max_reps=1000, target_rel_stderr=0.5, time_cap_s=10, warmup=0)
    stats = Timer("cpu", cfg).time(lambda i: time.sleep(0.001))
    assert stats.n == 5
