"""The host's filesystem UNIX sockets, hidden from a profiler run, which has to keep AF_UNIX.

Nsight Compute's frontend and the injection library inside its target talk over a UNIX socket (session 12 on the
H200: behind every wall ncu never finished; with AF_UNIX allowed and every other wall up it profiled in 7.9 s).
Abstract UNIX sockets belong to a network namespace, and the profiler run has an empty one of its own, so those
reach nothing outside. A socket with a path is reached through the filesystem from any namespace: a 0666 socket
under /run answers a connect() from the unprivileged uid (issue 25, attack 2). So before the uid is dropped, in
the run's own mount namespace, every such socket of the host gets /dev/null bound over it, and a connect() there
fails with ECONNREFUSED.

Which sockets: those the host's network namespace has bound (its /proc/net/unix, read before the run leaves that
namespace), and any socket found under /run and /var/run (sockets of other network namespaces, e.g. containers',
that live there). What this cannot see: a socket bound after the list was read (the run is minutes long at most),
and a socket of another network namespace outside those folders.
"""
from __future__ import annotations

import ctypes
import os
import stat

MS_BIND, MS_REMOUNT, MS_RDONLY = 4096, 32, 1
SCAN_ROOTS = ("/run", "/var/run")
SCAN_LIMIT = 20000          # entries walked under SCAN_ROOTS at most: a bounded cost before the profile starts


def bound_paths(proc_net_unix: str = "/proc/net/unix") -> list[str]:
    """The paths of the sockets the caller's network namespace has bound (abstract names, '@...', left out)."""
    try:
        lines = open(proc_net_unix, encoding="utf-8", errors="replace").read().splitlines()[1:]
    except OSError:
        return []
    paths = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            paths.append(fields[7])
    return sorted(set(paths))


def scanned_paths(roots=SCAN_ROOTS, limit: int = SCAN_LIMIT) -> list[str]:
    """Sockets found under `roots` (symlinks not followed), walking at most `limit` entries."""
    found, seen = [], 0
    for root in roots:
        for folder, dirs, files in os.walk(root, followlinks=False):
            for name in files + dirs:
                seen += 1
                path = os.path.join(folder, name)
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        found.append(path)
                except OSError:
                    continue
            if seen >= limit:
                return sorted(set(found))
    return sorted(set(found))


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def mask(paths) -> tuple[int, list[str]]:
    """As root in a mount namespace of the caller's own: /dev/null bound over each path that is still a socket
    here (a socket under the private /tmp is gone already). Returns (how many were masked, problems)."""
    libc = ctypes.CDLL(None, use_errno=True)
    masked, problems = 0, []
    for path in sorted(set(paths)):
        if not _is_socket(path):
            continue
        if libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None) != 0:
            problems.append(f"cannot hide the host's UNIX socket {path}: {os.strerror(ctypes.get_errno())}")
            continue
        libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
        masked += 1
    return masked, problems
