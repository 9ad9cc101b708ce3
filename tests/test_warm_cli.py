"""`workbench warm`: refuses bad input and a missing GPU in one line with nothing created; with a CPU stand-in as the
baseline it times each scenario once, reports what was cached already, and a later `check` times none of it."""
import pytest


@pytest.mark.parametrize("argv,needle", [
    (["--suite", "nope"], "suite not found"),
    (["--anchors", "fa9"], "unknown anchor"),
    (["--baseline", "missing.cu"], "not found"),
    (["--baseline", "standin:nope"], "no CPU stand-in"),
    (["--timeout", "0"], "must be a number > 0"),
])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(argv, needle, run_cli, tmp_path):
    code, out, err = run_cli(["warm", *argv, "--cache-dir", tmp_path / "cache"])
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert out == "" and not (tmp_path / "cache").exists()


def test_without_a_gpu_it_says_so_in_one_line_after_checking_its_arguments(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_NO_GPU", "1")
    code, _, err = run_cli(["warm", "--suite", "full", "--anchors", "fa3,cudnn,fa2", "--cache-dir", tmp_path / "c"])
    assert code == 2 and "needs a CUDA GPU" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()                  # not even the original's build
    code, _, err = run_cli(["warm", "--suite", "nope", "--cache-dir", tmp_path / "c"])
    assert code == 2 and "suite not found" in err         # arguments first, then the GPU


def test_warm_times_each_scenario_once_and_a_check_after_it_times_none(run_cli, tmp_path):
    # tmp_path is 0700: the contained worker's uid cannot search it, so cached rows must be read before the drop
    common = ["--suite", "smoke", "--baseline", "standin:slow_correct", "--anchors", "", "--cache-dir", tmp_path]
    code, out, _ = run_cli(["warm", *common])
    assert code == 0, out
    assert "timing cache: 0 of 8 baseline and anchor timings cached already (original 0/8)" in out
    assert "original: timed now 8 of 8 (" in out and "eta " in out and "; done" in out
    code, out, _ = run_cli(["warm", *common])
    assert code == 0 and "original: timed now 0 of 8 (0.0 s), cached already 8" in out
    code, out, _ = run_cli(["check", "standin:correct", "--traces", "", *common])
    assert code == 0, out
    assert "timing cache: timed now original 0 (0.0 s); cached before: original 8" in out   # rows too: no call
