"""Named points where a test can make this process die by SIGKILL, to prove that no write is ever half-done.

    crash_point("compact.parts_unlinked")      # kills the process when WORKBENCH_CRASH_AT names this point

Set `WORKBENCH_CRASH_AT=name` (or `name@N` to die at the N-th time the point is reached) in the environment
of a child process; in normal runs this is one dictionary lookup.
"""
from __future__ import annotations

import os
import signal

ENV = "WORKBENCH_CRASH_AT"
_seen: dict = {}


def crash_point(name: str) -> None:
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
