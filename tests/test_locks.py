"""workbench.locks with two real processes: the second is refused in one line naming the holder's pid."""
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from workbench.locks import LockHeld, hold_lock

ROOT = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent("""
    import sys, time
    from workbench.locks import hold_lock
    with hold_lock(sys.argv[1], what="campaign c-1"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def _start_holder(lock, seconds):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(seconds)], stdout=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_process_is_refused_naming_the_holder(tmp_path):
    lock = tmp_path / "c-1" / ".lock"
    holder = _start_holder(lock, 30)
    try:
        with pytest.raises(LockHeld) as err:
            with hold_lock(lock, what="campaign c-1"):
                pass
        message = str(err.value)
        assert "\n" not in message and f"pid {holder.pid}" in message and "campaign c-1" in message
        assert err.value.holder_pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    # the holder died by SIGKILL: the kernel released its lock, the stale file blocks nobody
    with hold_lock(lock, what="campaign c-1"):
        assert lock.read_text().strip() == str(os.getpid())


def test_sequential_holders_and_release(tmp_path):
    lock = tmp_path / ".lock"
    with hold_lock(lock, what="x"):
        pass
    holder = _start_holder(lock, 0)
    assert holder.wait(timeout=30) == 0
    with hold_lock(lock, what="x"):
        pass


def test_wait_blocks_until_released(tmp_path):
    lock = tmp_path / ".lock"
    holder = _start_holder(lock, 1.0)
    start = time.monotonic()
    with hold_lock(lock, what="x", wait=True):
        assert time.monotonic() - start > 0.5     # it waited for the holder's 1 s sleep
    holder.wait()


def test_symlink_at_lock_path_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / ".lock").symlink_to(victim)
    with pytest.raises(OSError):
        with hold_lock(tmp_path / ".lock", what="x"):
            pass
    assert victim.read_text() == "keep me"
