"""The contained process's filesystem view: a size-capped private folder over the world-writable folders, every
other mount read-only, and (for a profiler run) the loopback of its own network namespace brought up.

The private folder's cap: the parent (root) makes a tmpfs with the new mount API (fsopen/fsconfig/fsmount), which
gives a *detached* mount, attached nowhere on the host. The contained process inherits its fd and attaches it over
its private folder in its own mount namespace (move_mount); the parent reads what was staged there through the same
fd (/proc/self/fd/N) after the process is gone, and the memory is freed when the fd is closed. Nothing is ever
mounted on the host, so a killed harness leaves no mount behind. Kernels without the API (< 5.2) get a plain
folder and a notice.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import struct
import sys
from pathlib import Path

from workbench.harness.paths import REPO_ROOT

WRITABLE_SHARED = ("/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue", "/tmp")   # /tmp last
KEEP_WRITABLE = ("/proc", "/sys", "/dev", "/dev/pts")

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
NR_MOVE_MOUNT, NR_FSOPEN, NR_FSCONFIG, NR_FSMOUNT = 429, 430, 431, 432        # x86_64 and aarch64 alike
FSOPEN_CLOEXEC, FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE, FSMOUNT_CLOEXEC = 1, 1, 6, 1
MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 0x2, 0x4, 0x4, -100
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _call(fn, *args) -> str:
    """'' on success, else the error text."""
    if fn(*args) >= 0:
        return ""
    return os.strerror(ctypes.get_errno())


def detached_tmpfs(size_bytes: int, uid: int, gid: int, max_files: int = 65536) -> tuple[int, str]:
    """(fd of a new tmpfs of at most size_bytes, owned by uid:gid, mode 0700, attached nowhere; '') or (-1, why)."""
    libc = _libc()
    fs = libc.syscall(ctypes.c_long(NR_FSOPEN), b"tmpfs", ctypes.c_long(FSOPEN_CLOEXEC))
    if fs < 0:
        return -1, f"fsopen: {os.strerror(ctypes.get_errno())}"
    try:
        for key, value in (("size", str(size_bytes)), ("nr_inodes", str(max_files)), ("mode", "0700"),
                           ("uid", str(uid)), ("gid", str(gid))):
            if libc.syscall(ctypes.c_long(NR_FSCONFIG), ctypes.c_long(fs), ctypes.c_long(FSCONFIG_SET_STRING),
                            key.encode(), value.encode(), ctypes.c_long(0)) < 0:
                return -1, f"fsconfig {key}: {os.strerror(ctypes.get_errno())}"
        if libc.syscall(ctypes.c_long(NR_FSCONFIG), ctypes.c_long(fs), ctypes.c_long(FSCONFIG_CMD_CREATE),
                        None, None, ctypes.c_long(0)) < 0:
            return -1, f"fsconfig create: {os.strerror(ctypes.get_errno())}"
        mnt = libc.syscall(ctypes.c_long(NR_FSMOUNT), ctypes.c_long(fs), ctypes.c_long(FSMOUNT_CLOEXEC),
                           ctypes.c_long(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV))
        if mnt < 0:
            return -1, f"fsmount: {os.strerror(ctypes.get_errno())}"
        return int(mnt), ""
    finally:
        os.close(fs)


def attach(mount_fd: int, target: Path) -> str:
    """Attach a detached mount over `target` (in this process's mount namespace); '' or why not."""
    libc = _libc()
    return _call(libc.syscall, ctypes.c_long(NR_MOVE_MOUNT), ctypes.c_long(mount_fd), b"", ctypes.c_long(AT_FDCWD),
                 os.fsencode(target), ctypes.c_long(MOVE_MOUNT_F_EMPTY_PATH))


def through_fd(mount_fd: int) -> Path:
    """The path by which the parent reaches a detached mount it holds (its contents outlive the namespace)."""
    return Path(f"/proc/self/fd/{mount_fd}")


def mount_own_proc() -> str:
    """A procfs of this (new) PID namespace over /proc, in this (private) mount namespace; '' or why not.

    Without it /proc is the parent namespace's: getpid() says 2 while /proc/self is the caller's pid, and
    /proc/2 is the host's kthreadd. The CUDA driver reads /proc/<getpid()>/...: on the H200 (2026-12-01) every
    contained worker failed cuInit with error 304 ('OS call failed') until the worker got its own /proc."""
    libc = _libc()
    flags = 0x2 | 0x4 | 0x8                       # MS_NOSUID | MS_NODEV | MS_NOEXEC
    return _call(libc.mount, b"proc", b"/proc", b"proc", flags, None)


def bring_up_loopback() -> str:
    """`ip link set lo up` in this (new, empty) network namespace; '' or why not."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH", b"lo", 0)
            flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req + b"\0" * 22)[:18])[1]
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP) + b"\0" * 22)
    except OSError as err:
        return f"loopback: {err.strerror}"
    return ""


def _mount_points() -> list[tuple[str, set]]:
    points = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return points
    for line in lines:
        fields = line.split()
        if len(fields) > 5:
            target = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            points.append((target, set(fields[5].split(","))))
    return points


def _needed(reach=()) -> list[str]:
    """Folders the contained process still reads (the Python installation, the package, sys.path, `reach`)."""
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO_ROOT), *(x for x in sys.path if x), *reach}
    return sorted({os.path.realpath(x) for x in wanted if os.path.isdir(x)})


def _outermost(paths: list[str]) -> list[str]:
    return [x for x in paths if not any(x.startswith(o + "/") for o in paths if o != x)]


def _still_needed_under(target: str, reach=()) -> list[str]:
    """Needed folders (above) inside `target`, outermost only: a checkout or virtual environment under /tmp (a CI
    clone, say) must stay visible when the private folder covers /tmp, or the next lazy import fails."""
    return _outermost([x for x in _needed(reach) if x.startswith(target.rstrip("/") + "/")])


def _cover_keeping(source: str, target: str, keep_paths: list[str], fstype: bytes | None = None) -> list[str]:
    """Mount `source` over `target` (a bind, or a new filesystem of `fstype`), then bind `keep_paths` (inside
    target) back in from underneath; what could not be done."""
    libc = _libc()
    # held open across the cover: /proc/self/fd/N still names the folder underneath afterwards
    keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep_paths}
    flags, data = (MS_BIND, None) if fstype is None else (MS_NOSUID | MS_NODEV, b"mode=0755,size=1m")
    why = _call(libc.mount, os.fsencode(source), os.fsencode(target), fstype, flags, data)
    problems = [f"{target} stays as it is ({why})"] if why else []
    for path, fd in keep.items():
        if not why:
            Path(path).mkdir(parents=True, exist_ok=True)         # inside the cover now
            again = _call(libc.mount, os.fsencode(f"/proc/self/fd/{fd}"), os.fsencode(path), None,
                          MS_BIND | MS_REC, None)
            if again:
                problems.append(f"{path} is hidden by the cover of {target} ({again})")
        os.close(fd)
    return problems


def _closed_to_others(path: str) -> str | None:
    """The outermost folder on the way to `path` that other users may not enter (a home of mode 0700), or None."""
    current = Path("/")
    for part in Path(path).parts[1:]:
        current = current / part
        try:
            if not os.stat(current).st_mode & 0o001:
                return str(current)
        except OSError:
            return None
    return None


def open_private_homes(reach) -> list[str]:
    """For a program started after the uid drop (contained_run.py): a home it cannot enter (/root, 0700) that
    holds the Python installation, the package or the program is covered by an empty folder, and just those are
    bound back in (read-only later, like every mount); the rest of that home stays out of sight."""
    closed: dict = {}
    for path in _needed(reach):
        top = _closed_to_others(path)
        if top and top != path:
            closed.setdefault(top, []).append(path)
    problems = []
    for top, inside in closed.items():
        problems += _cover_keeping("tmpfs", top, _outermost(inside), fstype=b"tmpfs")
    return problems


def private_mounts(private: Path, reach=()) -> list[str]:
    """Mount `private` over the world-writable folders and remount everything else read-only (in this mount
    namespace only). Folders the worker still needs below a covered one (and `reach`) are bound back in
    (read-only, like everything else). Returns what could not be done."""
    libc = _libc()
    problems = []
    for target in WRITABLE_SHARED:
        if os.path.isdir(target) and not os.path.islink(target):
            problems += [p.replace("stays as it is", "stays shared")
                         for p in _cover_keeping(str(private), target, _still_needed_under(target, reach))]
    bound = set(WRITABLE_SHARED) | {str(private)}      # the private folder's own mount: covered by /tmp now
    failed = 0
    for target, options in _mount_points():
        if target in bound or any(target == k or target.startswith(k + "/") for k in ("/proc", "/sys")) \
                or target in KEEP_WRITABLE:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= MS_NOSUID if "nosuid" in options else 0
        flags |= MS_NODEV if "nodev" in options else 0
        flags |= MS_NOEXEC if "noexec" in options else 0
        if _call(libc.mount, None, os.fsencode(target), None, flags, None):
            failed += 1
    if failed:
        problems.append(f"{failed} mount(s) stay writable")
    return problems
