"""scripts/term_grace.py: a script whose main thread is stuck in a C call that ignores signals (as a CUDA call
behind a hung kernel is) still ends on SIGTERM, grace seconds later with status 124; one whose handler can run
ends through the handler as before, and the watch never fires."""
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import ctypes, signal, sys, time
sys.path.insert(0, {scripts!r})
from term_grace import exit_if_stuck_after_sigterm
def stop(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, stop)
exit_if_stuck_after_sigterm(grace_s=1.0)
print("ready", flush=True)
try:
    if {stuck}:
        ctypes.CDLL({lib!r}).spin()          # never returns, and no Python bytecode runs meanwhile
    else:
        time.sleep(60)
except KeyboardInterrupt:
    print("handled", flush=True)
"""


def run_child(tmp_path, stuck):
    lib = tmp_path / "spin.so"
    if stuck:
        (tmp_path / "spin.c").write_text("void spin(void) { volatile int x = 0; while (!x) { } }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(tmp_path / "spin.c")], check=True)
    code = CHILD.format(scripts=str(ROOT / "scripts"), stuck=stuck, lib=str(lib))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, time.monotonic() - start


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (a C call that ignores signals)")
def test_a_main_thread_stuck_in_c_ends_grace_seconds_after_sigterm(tmp_path):
    rc, out, err, seconds = run_child(tmp_path, stuck=True)
    assert rc == 124 and "handled" not in out
    assert "SIGTERM 1 s ago and still running" in err
    assert 0.9 <= seconds < 30


def test_a_handler_that_can_run_ends_the_script_as_before(tmp_path):
    rc, out, err, seconds = run_child(tmp_path, stuck=False)
    assert rc == 0 and "handled" in out and "still running" not in err
    assert seconds < 30
