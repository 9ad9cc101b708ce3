"""scripts/ray_head.py starts `ray start --head` again when it exits while starting: Ray 2.60's raylet aborts when
its dashboard agent misses a fixed 15 s window to report its ports, which a loaded 2-core machine hits now and then
(CI, 2026-12-04). A stand-in for `ray start` (no Ray needed) fails its first start and comes up on the second."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import ray_head  # noqa: E402

# exits 1 on its first `failures` runs, then writes the address file `ray start` writes once up and blocks
FAKE_RAY_START = textwrap.dedent("""
    import pathlib, sys, time
    temp_dir, failures = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    runs = temp_dir / "runs"
    n = int(runs.read_text()) if runs.exists() else 0
    runs.write_text(str(n + 1))
    if n < failures:
        print("Check failed: WaitForDashboardAgentPorts (stand-in)", flush=True)
        sys.exit(1)
    (temp_dir / "ray_current_cluster").write_text("127.0.0.1:1")
    time.sleep(600)
""")


def fake_start(tmp_path, monkeypatch, failures: int):
    script = tmp_path / "fake_ray_start.py"
    script.write_text(FAKE_RAY_START)
    monkeypatch.setattr(ray_head, "head_command",
                        lambda port, temp_dir, gpus, cpus: [sys.executable, str(script), temp_dir, str(failures)])


AUTH_KEYS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN")


@pytest.fixture(autouse=True)
def driver_env(monkeypatch):
    """Each test starts with no Ray token settings, and monkeypatch puts the process's own back after it, whatever
    RayHead did: a later test's `ray.init()` in this process must not see a dead head's token path."""
    for key in AUTH_KEYS:
        monkeypatch.delenv(key, raising=False)


def test_a_head_that_exits_while_starting_is_started_again(tmp_path, monkeypatch):
    fake_start(tmp_path, monkeypatch, failures=1)
    log = tmp_path / "head.log"
    head = ray_head.RayHead(log=str(log))
    try:
        assert head.attempts == 2 and head.process.poll() is None
        assert (Path(head.temp_dir) / "runs").read_text() == "2"
    finally:
        head.stop()
    text = log.read_text()
    assert "Check failed" in text and "exited 1 while starting (attempt 1 of 3)" in text
    assert head.process.poll() is not None and not ray_head.session_pids(head.temp_dir)


def test_a_head_that_never_starts_is_one_error_after_the_last_attempt(tmp_path, monkeypatch):
    fake_start(tmp_path, monkeypatch, failures=ray_head.START_ATTEMPTS)
    with pytest.raises(RuntimeError, match=r"did not come up in 3 attempts \(last exit 1\)"):
        ray_head.RayHead(log=str(tmp_path / "head.log"))


def test_stop_gives_the_driver_its_own_token_settings_back(tmp_path, monkeypatch):
    """CI, 2026-12-05: a RayHead of this test file left RAY_AUTH_MODE and RAY_AUTH_TOKEN_PATH in the pytest process,
    and test_ray_node.py's `ray.init()` then started an instance whose GCS took that head's token while the driver
    used the one Ray had cached: "Authentication token is missing or incorrect", four errors."""
    monkeypatch.setenv("RAY_AUTH_TOKEN", "the-driver's-own")
    fake_start(tmp_path, monkeypatch, failures=0)
    head = ray_head.RayHead(log=str(tmp_path / "head.log"))
    try:
        assert os.environ["RAY_AUTH_TOKEN_PATH"] == head.auth_env["RAY_AUTH_TOKEN_PATH"]
        assert "RAY_AUTH_TOKEN" not in os.environ          # it would win over the head's path
    finally:
        head.stop()
    assert os.environ.get("RAY_AUTH_TOKEN") == "the-driver's-own"
    assert "RAY_AUTH_MODE" not in os.environ and "RAY_AUTH_TOKEN_PATH" not in os.environ


def test_a_head_left_unstopped_is_stopped_when_its_process_exits(tmp_path):
    """scripts/ray_pool_check.py turns `timeout`'s SIGTERM into SystemExit(143); one that landed between the head's
    start and the caller's try/finally left the head's processes running (CI machine under load, 2026-12-05: 2 of 5
    runs of test_sigterm_stops_the_head_the_script_started). The head is stopped at the interpreter's exit too."""
    script = tmp_path / "fake_ray_start.py"
    script.write_text(FAKE_RAY_START)
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "scripts")!r})
        import ray_head
        ray_head.head_command = lambda port, temp_dir, gpus, cpus: [sys.executable, {str(script)!r}, temp_dir, "0"]
        head = ray_head.RayHead()
        print(head.temp_dir, flush=True)
        sys.exit(143)                    # no head.stop(): the SIGTERM handler's exit outside any finally
    """)
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr[-2000:]
    temp_dir = done.stdout.strip()
    assert temp_dir and (Path(temp_dir) / "ray_current_cluster").exists()       # the stand-in head did come up
    assert not ray_head.session_pids(temp_dir)
