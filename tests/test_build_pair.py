"""check() builds the candidate and the baseline at once (workbench/harness/build_pair.py): a first run on a new GPU
paid a cold 04_pingpong build (13.9 s on the H200) and then the original's (~6.5 s) one after the other."""
import threading

import pytest

from workbench.harness.build_pair import concurrently


def test_the_second_runs_while_the_first_does():
    both = threading.Barrier(2, timeout=60)     # passes only when the two calls are under way at the same time
    assert concurrently(lambda: (both.wait(), "candidate")[1], lambda: (both.wait(), "baseline")[1]) == \
        ("candidate", "baseline")


def test_an_error_of_either_is_raised_after_both_are_done():
    finished = []

    def slow_ok():
        finished.append("second")
        return 1

    def fails():
        raise ValueError("candidate build broke")
    with pytest.raises(ValueError, match="candidate build broke"):
        concurrently(fails, slow_ok)
    assert finished == ["second"]
    with pytest.raises(KeyError):
        concurrently(lambda: 1, lambda: {}["missing"])


def test_check_reports_a_baseline_that_does_not_build_after_building_both(tmp_path):
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest
    bad = tmp_path / "broken_original.cu"
    bad.write_text('extern "C" int attn_fwd( { return 0; }\n')
    request = CheckRequest(kernel_path="standin:correct", suite="smoke", baseline_path=str(bad),
                           cache_dir=str(tmp_path / "cache"))
    result = check(request, device="cpu")
    assert result.error.startswith("the baseline kernel does not build"), result.error
