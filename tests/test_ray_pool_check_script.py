"""scripts/ray_pool_check.py (the GPU stages ray1/ray2/ray2kill of scripts/gpu_run.sh) runs on the CPU stand-ins
with --cpu, so its plumbing is proved here before it spends GPU time: ray1's path (a Ray head of its own reached by
address, a local and a Ray evaluation, the table), a Ray worker found judging, killed, the evaluation judged again
once, every result kept; the head gone after the script, even when `timeout` stops it; the refusals before any work."""
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = [sys.executable, "scripts/ray_pool_check.py"]
CPU_RUN = ["--cpu", "--suite", "smoke", "--anchors", "", "--head"]
contained_here = pytest.mark.skipif(os.geteuid() != 0, reason="the contained worker needs root")


def env_for(tmp_path, **extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), WORKBENCH_CACHE=str(tmp_path / "cache"), **extra)


def run(args, tmp_path, timeout=900, **extra):
    return subprocess.run(SCRIPT + args, cwd=ROOT, env=env_for(tmp_path, **extra), capture_output=True, text=True,
                          timeout=timeout)


def processes_naming(text: str) -> list:
    """pids of live processes whose command line names `text` (a Ray head's temp dir: its GCS, raylet, workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@contained_here
def test_the_head_brings_its_own_token_on_a_machine_that_has_none(tmp_path):
    """A fresh machine has no ~/.ray/auth_token, so `ray start --head` runs without token authentication there; the
    H200 of session 9 showed a driver told RAY_AUTH_MODE=token then refusing to connect. The head now gets a token
    of its own and the driver its path, whatever the machine holds (HOME empty here, RAY_AUTH_MODE unset)."""
    pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    home = tmp_path / "home"
    home.mkdir()
    extra = {"HOME": str(home)}
    env_keys = [k for k in os.environ if k.startswith("RAY_AUTH")]
    done = subprocess.run(SCRIPT + ["one", *CPU_RUN, "--rounds", "1", "--json", str(tmp_path / "one.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={k: v for k, v in env_for(tmp_path, **extra).items() if k not in env_keys})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ray_pool_check one: 4 ok, 0 FAIL" in done.stdout
    assert not (home / ".ray" / "auth_token").exists()      # the machine's token store was not what it used


@contained_here
def test_the_one_gpu_stage_on_its_own_head_on_the_stand_ins(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    out, table = tmp_path / "one.json", tmp_path / "one.txt"
    done = run(["one", *CPU_RUN, "--rounds", "1", "--json", str(out), "--table", str(table),
                "--head-log", str(tmp_path / "head.log")], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ray_pool_check one: 4 ok, 0 FAIL" in done.stdout
    assert "verdict: cpu same geomeans" in done.stdout              # stand-in timings are shown, not judged
    figures = json.loads(out.read_text())
    [head] = figures["ray_heads"]
    assert figures["runs"]["ray"][0]["versions"]["pool"] == "ray" and figures["runs"]["ray"][0]["timed_now"] == {
        "original": 0}                                              # the node read what the local run merged
    text = table.read_text()
    assert re.search(r"\| local +\| 1 +\|", text) and re.search(r"\| ray \(own head, 1 GPU\) +\| 1 +\|", text)
    assert "Ray overhead" in text and "ok   contained on the Ray node: uids [" in text
    assert processes_naming(head["temp_dir"]) == []                 # the head and its workers are gone


@contained_here
def test_the_kill_stage_on_the_stand_ins(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    out = tmp_path / "kill.json"
    done = run(["kill", *CPU_RUN, "--candidates", "2", "--settle-s", "1", "--json", str(out)], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "verdict: ok judged again once, reported once" in done.stdout
    assert "ray_pool_check kill: 3 ok, 0 FAIL" in done.stdout
    figures = json.loads(out.read_text())
    assert figures["results"] == 2 and len(figures["retried"]) == 1 and figures["killed"]["pid"] > 0
    assert processes_naming(figures["ray_heads"][0]["temp_dir"]) == []


def test_sigterm_stops_the_head_the_script_started(tmp_path):
    """gpu_run.sh runs the script under `timeout`: its SIGTERM must not leave a Ray head on the GPU machine."""
    pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    # stderr kept: this test failed twice under load (2026-12-02, 2026-12-04) with no output to say why
    errors = open(tmp_path / "script.stderr", "w")
    script = subprocess.Popen(SCRIPT + ["one", *CPU_RUN, "--rounds", "3"], cwd=ROOT, env=env_for(tmp_path),
                              stdout=subprocess.PIPE, stderr=errors, text=True)
    temp_dir = None
    for line in script.stdout:                                      # waits on the script's own line, not a clock
        match = re.search(r"Ray head \S+ up in .* \(temp dir (\S+)\)", line)
        if match:
            temp_dir = match.group(1)
            break
    assert temp_dir, "the script never said its head was up"
    assert processes_naming(temp_dir)                               # the head is running now
    script.send_signal(signal.SIGTERM)
    rest, _ = script.communicate(timeout=300)
    errors.close()
    said = (f"stdout after the head was up: {rest[-3000:]!r}; "
            f"stderr: {(tmp_path / 'script.stderr').read_text()[-3000:]!r}")
    assert script.returncode == 143, said
    assert processes_naming(temp_dir) == [], said


def test_refusals_come_before_any_work(tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "timing_cache.json").write_text("{}")
    done = run(["two", "--cpu", "--cache", str(tmp_path / "used")], tmp_path, timeout=120)
    assert done.returncode == 2 and "is not empty" in done.stderr and done.stdout == ""
    if not os.environ.get("CUDA_VISIBLE_DEVICES") and not any(Path("/dev").glob("nvidia[0-9]*")):
        done = run(["one"], tmp_path, timeout=120)
        assert done.returncode == 2 and "no GPU here" in done.stderr
        done = run(["two"], tmp_path, timeout=120)
        assert done.returncode == 2 and "this machine has 0" in done.stderr and done.stdout == ""
    assert not (tmp_path / "cache").exists()
