"""scripts/bench_timing.py's round-robin sampling on a CPU stand-in: a clock drift during one shape lands on every
implementation alike, so identical builds get identical medians (timed one after another they did not: run 26)."""
import importlib.util
import pathlib

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "bench_timing", pathlib.Path(__file__).resolve().parents[1] / "scripts" / "bench_timing.py")
bench_timing = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_timing)


class DriftingClock:
    """Each sample of any implementation advances a shared clock; the time a call takes grows with it (a GPU that
    slows down as it heats). fn() returns the call's cost at full clock."""

    def __init__(self, slow_down_per_sample):
        self.samples, self.order, self.slope = 0, [], slow_down_per_sample

    def make(self, fn):
        clock = self

        class Timed:
            def sample(self):
                clock.samples += 1
                clock.order.append(fn)
                return fn() * (1.0 + clock.slope * clock.samples)
        return Timed()


def test_identical_builds_get_the_same_median_under_drift():
    clock = DriftingClock(0.01)
    medians = bench_timing.time_interleaved({"a": lambda: 1.0, "b": lambda: 1.0, "c": lambda: 1.0},
                                            reps=9, cap_s=10.0, make=clock.make)
    # apart by at most one round's drift (3 samples of 1 %), against ~27 % back to back (the next test)
    assert max(medians.values()) / min(medians.values()) == pytest.approx(1.0, abs=0.03)


def test_back_to_back_timing_would_have_split_them():
    """The check above can fail: timed one after another the same drift separates identical builds."""
    clock = DriftingClock(0.01)
    back_to_back = {name: bench_timing.time_interleaved({name: lambda: 1.0}, reps=9, cap_s=10.0,
                                                        make=clock.make)[name] for name in "abc"}
    assert back_to_back["c"] / back_to_back["a"] > 1.15


def test_every_implementation_gets_the_same_count_and_each_round_rotates():
    clock = DriftingClock(0.0)
    fa, fb = (lambda: 1.0), (lambda: 2.0)
    bench_timing.time_interleaved({"a": fa, "b": fb}, reps=4, cap_s=10.0, make=clock.make)
    timed = clock.order[2:]   # the first two: one probe sample each, to size the count
    assert timed.count(fa) == timed.count(fb) == 4
    assert timed[:4] == [fa, fb, fb, fa]


def test_the_count_follows_the_slowest_implementation_and_the_cap():
    clock = DriftingClock(0.0)
    bench_timing.time_interleaved({"fast": lambda: 0.001, "slow": lambda: 100.0}, reps=20, cap_s=0.5,
                                  make=clock.make)   # 100 ms a call: 5 fit in 0.5 s
    assert len(clock.order) == 2 + 2 * 5
    clock = DriftingClock(0.0)
    bench_timing.time_interleaved({"x": lambda: 1000.0}, reps=20, cap_s=0.5, make=clock.make)
    assert len(clock.order) == 1 + 3   # never under three samples
