"""Caches a contained worker staged in its private folder, merged into the real cache by the trusted parent.

The staged folder belongs to the candidate's uid, so nothing there is followed (O_NOFOLLOW, regular files only)
or trusted beyond its shape: timing entries must look like {"stats": {name: number|str|None}, "extra": {...}},
tensors must be named like the cache's own (<32 hex>.pt) and be of bounded size.
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path


def merge_staged_cache(staged: Path, cache_dir: Path, max_bytes: int = 64 << 20) -> int:
    """Merge what a contained worker staged (timing_cache.json entries, tensors/<hash>.pt) into the real cache.
    The staged folder belongs to the candidate's uid: nothing there is followed or trusted beyond its shape.
    Returns the number of entries and files taken."""
    taken = 0
    data = _read_plain(staged / "timing_cache.json", max_bytes)
    entries = {}
    if data:
        try:
            parsed = json.loads(data)
        except (ValueError, RecursionError):
            parsed = {}
        if isinstance(parsed, dict):
            entries = {k: v for k, v in parsed.items() if isinstance(k, str) and _is_entry(v)}
    if entries:
        cache_dir.mkdir(parents=True, exist_ok=True)
        path = cache_dir / "timing_cache.json"
        try:
            on_disk = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            on_disk = {}
        on_disk.update(entries)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(on_disk))
        os.replace(tmp, path)
        taken += len(entries)
    tensors = staged / "tensors"
    if _is_plain_dir(tensors):
        for name in sorted(os.listdir(tensors))[:10_000]:
            if not re.fullmatch(r"[0-9a-f]{32}\.pt", name):
                continue
            blob = _read_plain(tensors / name, max_bytes * 4)
            if blob is None:
                continue
            target = cache_dir / "tensors" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, target)
            taken += 1
    return taken


def _is_entry(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("stats"), dict)
            and all(isinstance(v, (int, float)) or v is None or (isinstance(v, str) and len(v) < 200)
                    for v in value["stats"].values())
            and isinstance(value.get("extra", {}), dict))


def _is_plain_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _read_plain(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file reached without following a link, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return handle.read(limit)
