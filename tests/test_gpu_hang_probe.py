"""scripts/hang_probe.py end to end on a real GPU, on tests/fixtures/hang_stub.cu: a launch that never ends is
reported as a hang within the probe's timeout, with the progress marks and the stuck wait the stub wrote into
mapped host memory, and the GPU stays usable for the next child (the stub's quick case then runs); with --sequence
one process takes the shapes in suite order, graph replays included, and the hang names its shape."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]


def test_a_hung_launch_is_reported_with_its_marks_and_the_next_child_runs(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = dict(os.environ, OUT=str(tmp_path), LADDER_BUILD=str(tmp_path / "build"))
    run = subprocess.run([sys.executable, "scripts/hang_probe.py", "--suite", "tests/fixtures/hang_stub.csv",
                          "--kernels", "tests/fixtures/hang_stub.cu", "--launches", "2", "--timeout", "3"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 1
    by_name = {r["scenario"]: r for r in json.loads((tmp_path / "hang_probe.json").read_text())}
    hung, quick = by_name["S_hangs"], by_name["S_returns"]
    assert hung["status"] == "HANG" and hung["seconds"] < 60
    assert "HANG on S_hangs at launch 0 of 2" in hung["log"]
    assert "consumer 0 tile    1 Q arrived" in hung["log"] and "consumer 0 tile    5 Q arrived" in hung["log"]
    assert "stuck producer   barrier 0x380c0 parity 1: 1 warps in 1 CTAs (0); e.g. cta 0 thread 0 state " \
           "0x0000000912345678" in hung["log"]
    assert quick["status"] == "WRONG"          # it ran (no hang, no CUDA error) but wrote nothing


def test_a_sequence_runs_the_shapes_in_one_process_and_names_the_one_that_hangs(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = dict(os.environ, OUT=str(tmp_path), LADDER_BUILD=str(tmp_path / "build"))
    run = subprocess.run([sys.executable, "scripts/hang_probe.py", "--suite", "tests/fixtures/hang_stub_seq.csv",
                          "--kernels", "tests/fixtures/hang_stub.cu", "--launches", "2", "--replays", "2",
                          "--timeout", "3", "--sequence"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 1
    (group,) = json.loads((tmp_path / "hang_probe.json").read_text())
    assert group["scenario"] == "2 in order" and group["status"] == "HANG"
    first = json.loads(group["log"].splitlines()[0])          # S_returns ran first: launches, replays, its check
    assert first["scenario"] == "S_returns" and first["replays"] == 2 and first["status"] != "ok"
    assert "HANG on S_hangs at launch 0 of 2" in group["log"]


def test_together_checks_and_times_every_kernel_in_one_process_and_a_thread_reports_the_hang(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = dict(os.environ, OUT=str(tmp_path), LADDER_BUILD=str(tmp_path / "build"))
    stub = "tests/fixtures/hang_stub.cu"
    run = subprocess.run([sys.executable, "scripts/hang_probe.py", "--suite", "tests/fixtures/hang_stub_seq.csv",
                          "--kernels", stub, f"{stub}:SECOND_COPY=1", "--timeout", "3", "--together"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 1
    (group,) = json.loads((tmp_path / "hang_probe.json").read_text())
    assert group["status"] == "HANG" and group["kernel"] == "hang_stub + hang_stub[SECOND_COPY=1]"
    first = json.loads(group["log"].splitlines()[0])          # S_returns: both checked (nothing written: not ok)
    assert first["scenario"] == "S_returns" and set(first["status"]) == {"hang_stub", "hang_stub[SECOND_COPY=1]"}
    assert "HANG on S_hangs at the check of hang_stub (no progress for 3 s)" in group["log"]
    assert group["log"].count("stuck producer   barrier 0x380c0 parity 1") == 1   # only the hung library's wait
