"""End a GPU script that `timeout` asked to stop, also when a hung kernel keeps its main thread inside a CUDA call.

ladder_bench.py and tile_timeline.py turn SIGTERM into KeyboardInterrupt, so what they measured before it is
still summarised. But Python runs a signal handler only between bytecodes: a main thread blocked in a CUDA call
behind a kernel that never ends never runs it, and `timeout` without `-k` then waits forever (run 57, an H100).
The interpreter's C-level handler still writes each handled signal's number to the wakeup fd. A daemon thread reads
that fd and, once SIGTERM has come and `grace_s` has passed with the process still alive, says so and exits 124
(timeout's own status).
"""
import os
import signal
import sys
import threading
import time

STUCK_EXIT = 124


def exit_if_stuck_after_sigterm(grace_s: float = 15.0) -> None:
    """Arm the watch; call from the main thread after installing the SIGTERM handler."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd)

    def watch():
        while os.read(read_fd, 1) != bytes([signal.SIGTERM]):
            pass
        time.sleep(grace_s)
        print(f"# SIGTERM {grace_s:.0f} s ago and still running (a CUDA call blocked behind a hung kernel?): "
              f"exiting {STUCK_EXIT}", file=sys.stderr, flush=True)
        os._exit(STUCK_EXIT)

    threading.Thread(target=watch, name="term-grace", daemon=True).start()
