"""A CPU stand-in for a GPU's asynchronous execution, so CI can exercise the stream contract.

Stand-in kernels that model "work launched on another stream" hand it to `launch_async`; the harness's
device-wide `synchronize()` waits for it, exactly as cudaDeviceSynchronize waits for every stream.
"""
from __future__ import annotations

import threading

_pending: list[threading.Thread] = []
_lock = threading.Lock()


def launch_async(fn, delay_s: float = 0.05) -> None:
    def run():
        threading.Event().wait(delay_s)
        fn()

    thread = threading.Thread(target=run, daemon=True)
    with _lock:
        _pending.append(thread)
    thread.start()


def synchronize() -> None:
    with _lock:
        threads = list(_pending)
        _pending.clear()
    for thread in threads:
        thread.join()
