"""Two builds at once: check() builds the candidate here while the baseline builds on a thread of its own.

Each build is its own nvcc process in its own contained folder (nvcc.py), so two can run side by side; on the H200
a cold `04_pingpong` built in 13.9 s and the original in about 6.5 s more after it (docs/benchmarks.md, "CPU
analysis of the H200 logs"), which a first run on a new GPU paid one after the other.
"""
from __future__ import annotations

import threading
from typing import Callable


def concurrently(first: Callable, second: Callable) -> tuple:
    """(first(), second()), second() running on a thread meanwhile; an exception of either is raised here, once
    both are done (first's before second's)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = second()
        except BaseException as err:     # re-raised in the caller, after first() is done
            box["error"] = err
    thread = threading.Thread(target=run, name="second-build", daemon=True)
    thread.start()
    try:
        value = first()
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return value, box["value"]
