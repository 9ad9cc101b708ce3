"""Caches a contained worker staged in its private folder, merged into the real cache by the trusted parent.

The worker stages as it goes: a journal of timing entries (cache_file.py lines, one per timing, appended as each
is made) and tensors/<hash>.pt files (written to a .tmp name, then renamed). The parent merges while the worker
runs (`StagedMerger.merge`, after each of the worker's `cached` events and results) and once more after it
exits, so a run that is killed keeps what it finished.

The staged folder belongs to the candidate's uid, so nothing there is followed (O_NOFOLLOW, regular files only)
or trusted beyond its shape: a journal line must carry its checksum (a half-written or damaged line is skipped),
an entry must look like {"stats": {name: number|str|None}, "extra": {...}} with a positive finite median, and
its key must be one this run may write (`accept_key`: the baseline's and the anchors' keys for these scenarios
on this GPU and these versions, progress_cache.py). Tensors must be named like the cache's own (<32 hex>.pt)
and be of bounded size.
"""
from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Callable, Optional

from workbench.harness import cache_file


class StagedMerger:
    """Merges what is new in one staged folder since the last call; each call is cheap when nothing is."""

    def __init__(self, staged: Path, cache_dir: Path, accept_key: Optional[Callable[[str], bool]] = None,
                 max_bytes: int = 64 << 20):
        self.staged, self.cache_dir = Path(staged), Path(cache_dir)
        self.accept_key = accept_key or (lambda key: True)
        self.max_bytes = max_bytes
        self.offset = 0                   # journal bytes already merged
        self.tensors: dict = {}           # name -> (size, mtime_ns) already merged
        self.merged = 0                   # entries and files taken so far

    def merge(self) -> int:
        """Take the new journal lines and tensors; returns how many were taken now."""
        taken = self._merge_journal() + self._merge_tensors()
        self.merged += taken
        return taken

    def _merge_journal(self) -> int:
        data = _read_plain(self.staged / cache_file.JOURNAL, self.max_bytes, self.offset)
        if data is None:
            return 0
        if data == b"" and self.offset and _size(self.staged / cache_file.JOURNAL) < self.offset:
            self.offset = 0               # truncated behind our back: read it again (merging twice is harmless)
            return self._merge_journal()
        lines, consumed = cache_file.decode_lines(data)
        self.offset += consumed
        entries = {k: e for k, e in lines if _is_entry(e) and self.accept_key(k)}
        return cache_file.append_entries(self.cache_dir, entries)

    def _merge_tensors(self) -> int:
        tensors = self.staged / "tensors"
        if not _is_plain_dir(tensors):
            return 0
        taken = 0
        for name in sorted(os.listdir(tensors))[:10_000]:
            if not re.fullmatch(r"[0-9a-f]{32}\.pt", name):
                continue                   # a .tmp still being written, or not a cache file
            try:
                st = os.lstat(tensors / name)
            except OSError:
                continue
            if self.tensors.get(name) == (st.st_size, st.st_mtime_ns):
                continue
            blob = _read_plain(tensors / name, self.max_bytes * 4)
            if blob is None:
                continue
            target = self.cache_dir / "tensors" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.tmp_path(target)
            tmp.write_bytes(blob)
            os.replace(tmp, target)
            self.tensors[name] = (st.st_size, st.st_mtime_ns)
            taken += 1
        return taken


def merge_staged_cache(staged: Path, cache_dir: Path, max_bytes: int = 64 << 20,
                       accept_key: Optional[Callable[[str], bool]] = None) -> int:
    """Merge everything a contained worker staged into the real cache, once. Returns entries and files taken."""
    return StagedMerger(staged, cache_dir, accept_key, max_bytes).merge()


def _is_entry(value) -> bool:
    if not (isinstance(value, dict) and isinstance(value.get("stats"), dict)
            and all(isinstance(v, (int, float)) or v is None or (isinstance(v, str) and len(v) < 200)
                    for v in value["stats"].values())
            and isinstance(value.get("extra", {}), dict)):
        return False
    median = value["stats"].get("median_us")
    return isinstance(median, (int, float)) and math.isfinite(median) and median > 0


def _is_plain_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _read_plain(path: Path, limit: int, offset: int = 0) -> bytes | None:
    """The bytes from `offset` of a regular file reached without following a link, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        handle.seek(offset)
        return handle.read(limit)
