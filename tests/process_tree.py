"""Helpers for tests that kill processes mid-evaluation: a process's descendants, whether it is alive, and whether
it sits in `standin:hang`'s one-hour sleep (so a kill is known to land inside the scenario, not just before it)."""
import os
import platform
import struct
import time
from pathlib import Path

DEADLINE_S = 300.0        # generous: a loaded 2-core machine; the tests wait on process states, not on time
CLOCK_NANOSLEEP = {"x86_64": 230, "aarch64": 115}.get(platform.machine())
TIMER_ABSTIME = 1


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def in_long_sleep(pid: int, at_least_s: float = 600.0) -> bool:
    """The process's main thread is in clock_nanosleep with more than `at_least_s` to go (root reads the request
    from /proc/PID/mem): `standin:hang` is under way, the baseline's 2 ms sleeps never qualify."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        if CLOCK_NANOSLEEP is None or int(fields[0]) != CLOCK_NANOSLEEP:
            return False
        flags, request = int(fields[2], 16), int(fields[3], 16)
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(request)
            seconds, nanos = struct.unpack("qq", mem.read(16))
    except (OSError, ValueError, IndexError, struct.error):
        return False
    wanted = seconds + nanos / 1e9
    left = wanted - time.clock_gettime(time.CLOCK_MONOTONIC) if flags & TIMER_ABSTIME else wanted
    return left > at_least_s


def hanging_descendant(pid: int):
    """The descendant of `pid` that sits in standin:hang's sleep, or None."""
    return next((p for p in descendants(pid) if in_long_sleep(p)), None)


def wait_for(predicate, what: str, deadline_s: float = DEADLINE_S):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {deadline_s:.0f} s: {what}")


def can_see_sleeps() -> bool:
    return CLOCK_NANOSLEEP is not None and os.geteuid() == 0
