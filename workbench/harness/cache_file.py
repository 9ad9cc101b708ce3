"""The timing cache's entries on disk: a snapshot (timing_cache.json) and a journal of entries appended as they are
made (timing_cache.journal), read together; `compact` folds the journal into the snapshot.

An entry reaches the disk the moment it is timed (one appended line, no rewrite of the whole cache), so a run
that is killed keeps every timing it finished. Each journal line carries a checksum of its key and entry: a line
cut short by a kill, or damaged, fails it and is skipped (the timing is only redone). Appends and compaction
hold an exclusive lock (timing_cache.lock), so two runs on one cache never lose each other's entries; readers
take no lock (the snapshot is replaced atomically; a journal line half-written while it is read is skipped).

The same line format is what a contained worker stages for the parent (staged_cache.py).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Optional

SNAPSHOT = "timing_cache.json"
JOURNAL = "timing_cache.journal"
LOCK = "timing_cache.lock"


def _digest(key: str, entry: dict) -> str:
    return hashlib.sha256(json.dumps([key, entry], sort_keys=True, allow_nan=True).encode()).hexdigest()[:32]


def encode_line(key: str, entry: dict) -> bytes:
    """One journal line: {"k": key, "e": entry, "c": checksum}, newline-terminated."""
    return (json.dumps({"k": key, "e": entry, "c": _digest(key, entry)}, allow_nan=True) + "\n").encode()


def decode_line(line: bytes) -> Optional[tuple[str, dict]]:
    """(key, entry), or None for a line that is cut short, damaged or not an entry line."""
    try:
        item = json.loads(line)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    if not isinstance(item, dict) or not isinstance(item.get("k"), str) or not isinstance(item.get("e"), dict):
        return None
    if item.get("c") != _digest(item["k"], item["e"]):
        return None
    return item["k"], item["e"]


def decode_lines(data: bytes) -> tuple[list[tuple[str, dict]], int]:
    """The entries of the complete lines in `data`, and how many bytes those lines span (a last line without its
    newline is still being written: not consumed)."""
    end = data.rfind(b"\n") + 1
    entries = [e for e in (decode_line(line) for line in data[:end].splitlines() if line.strip()) if e]
    return entries, end


def read_entries(directory: Path) -> dict:
    """Snapshot, then the journal's entries in order (a later line wins); nothing readable is an empty cache."""
    directory = Path(directory)
    try:
        entries = json.loads((directory / SNAPSHOT).read_text())
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}         # a damaged cache is only a cache: start again
    try:
        data = (directory / JOURNAL).read_bytes()
    except OSError:
        data = b""
    entries.update(decode_lines(data)[0])
    return entries


@contextmanager
def locked(directory: Path):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def append_lines(path: Path, items: Iterable[tuple[str, dict]]) -> int:
    """Append entries to a journal file in one write; returns how many."""
    blob = b"".join(encode_line(k, e) for k, e in items)
    if not blob:
        return 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, blob)
    finally:
        os.close(fd)
    return blob.count(b"\n")


def append_entries(directory: Path, entries: dict) -> int:
    """Make entries durable in the real cache now (journal, under the lock)."""
    if not entries:
        return 0
    with locked(directory):
        return append_lines(Path(directory) / JOURNAL, entries.items())


def tmp_path(path: Path) -> Path:
    """Where to write `path` before renaming it into place: a name of this process and thread, since the checks of
    a LocalPool are threads of one process sharing a cache (one pid-named .tmp let one rename another's away)."""
    return path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")


def compact(directory: Path) -> None:
    """Fold the journal into the snapshot (atomically replaced) and empty the journal, under the lock."""
    directory = Path(directory)
    if not (directory / JOURNAL).exists():
        return
    with locked(directory):
        entries = read_entries(directory)
        tmp = tmp_path(directory / SNAPSHOT)
        tmp.write_text(json.dumps(entries))
        os.replace(tmp, directory / SNAPSHOT)
        os.unlink(directory / JOURNAL)
