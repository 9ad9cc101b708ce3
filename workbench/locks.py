"""One process at a time: an fcntl lock file for a campaign directory or an import of one session.

    with hold_lock(campaign_dir / ".lock", what="campaign c-1"):
        ...   # a second process gets LockHeld: "campaign c-1 is in use by pid 4242 (...): wait for it or stop it"

The lock is `flock` on an open file, so the kernel releases it when the holder dies (kill -9 included):
a stale lock file never blocks anyone, and its contents (the holder's pid) only serve the error message.
The file is left in place on release — removing it would let a third process lock a fresh inode while a
second still waits on the old one.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Iterator


class LockHeld(RuntimeError):
    """Another live process holds the lock; the message is one line naming its pid and what to do."""

    def __init__(self, message: str, holder_pid: int | None):
        super().__init__(message)
        self.holder_pid = holder_pid


def _read_holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        return int(text.split()[0]) if text else None
    except (OSError, ValueError, IndexError):
        return None


class HeldLock:
    """A lock held by this process until release() (or until the process dies)."""

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)      # closing releases the flock
            self._fd = None

    def __del__(self):
        self.release()


def acquire_lock(path: str | os.PathLike, what: str, wait: bool = False) -> HeldLock:
    """Lock `path` (created if missing) for longer than one `with` block: release() it when done.

    `what` names the thing protected, for the error ("campaign c-1", "import of session s-3").
    With `wait=False` (the default) a lock held by another process raises LockHeld at once.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_NOFOLLOW: a symlink planted at the lock path must not make us truncate some other file.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            pid = _read_holder(fd)
            for _ in range(20):         # the holder may have its flock but not yet its pid written: 0.2 s at most
                if pid:
                    break
                time.sleep(0.01)
                pid = _read_holder(fd)
            holder = f"pid {pid}" if pid else "another process"
            raise LockHeld(f"{what} is in use by {holder} (lock {path}): wait for it to finish or stop it "
                           f"(kill {pid if pid else '<pid>'}), then retry", pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return HeldLock(path, fd)


@contextlib.contextmanager
def hold_lock(path: str | os.PathLike, what: str, wait: bool = False) -> Iterator[Path]:
    """Hold an exclusive lock on `path` (created if missing) for the `with` block (see acquire_lock)."""
    lock = acquire_lock(path, what, wait)
    try:
        yield lock.path
    finally:
        lock.release()
