"""Cache of timings that do not change between candidates: the original kernel's and the anchors'.

Keyed by (implementation and its version/sha, scenario shape, GPU name, software versions, timing method
version), so a campaign does not re-time FA3 on every call, and numbers from different GPUs, library versions
or timing methods never mix (figures cached before device timing, events around the Python call, never match).
Also keeps the original kernel's sampled output rows, which verification compares candidates against.

In a contained worker (sandbox.py) the cache is read as root before the privilege drop (the folder stays open
as a directory fd, so tensors can still be read through it after) and written to a staging folder in the
private directory (`stage_writes`), which the parent merges after the worker exits.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional

import torch

from workbench.harness.build import default_cache_dir
from workbench.harness.result import Stats
from workbench.harness.scenarios import Scenario
from workbench.harness.timing import TIMING_VERSION


class TimingCache:
    def __init__(self, cache_dir: Optional[Path], gpu: str, versions: dict):
        self.dir = Path(cache_dir or default_cache_dir())
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "timing_cache.json"
        self.gpu = gpu
        self.env = f"{gpu}|torch {versions.get('torch')}|cuda {versions.get('cuda_runtime')}|timing {TIMING_VERSION}"
        try:
            self.entries = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (OSError, json.JSONDecodeError):
            self.entries = {}   # a damaged cache is only a cache: start again
        self.dirty = False
        self.stage_dir: Optional[Path] = None
        try:
            self._dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self._dir_fd = None

    def stage_writes(self, directory: Path) -> None:
        """From now on write entries and tensors under `directory`, for the parent to merge."""
        self.stage_dir = Path(directory)
        self.stage_dir.mkdir(parents=True, exist_ok=True)

    def _key(self, impl: str, s: Scenario) -> str:
        return f"{impl}|{s.key}|{self.env}"

    def get(self, impl: str, s: Scenario, with_extra: bool = False):
        entry = self.entries.get(self._key(impl, s))
        if entry is None:
            return None
        stats = Stats(**entry["stats"])
        return (stats, entry.get("extra", {})) if with_extra else stats

    def put(self, impl: str, s: Scenario, stats: Stats, extra: Optional[dict] = None) -> None:
        self.entries[self._key(impl, s)] = {"stats": stats.__dict__, "extra": extra or {}}
        self.dirty = True

    def flush(self) -> None:
        if not self.dirty:
            return
        if self.stage_dir is not None:
            path = self.stage_dir / "timing_cache.json"
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.entries))
            os.replace(tmp, path)
            self.dirty = False
            return
        # merge with what another worker may have written meanwhile, then replace atomically
        try:
            on_disk = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (OSError, json.JSONDecodeError):
            on_disk = {}
        on_disk.update(self.entries)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(on_disk))
        os.replace(tmp, self.path)
        self.entries, self.dirty = on_disk, False

    @staticmethod
    def _tensor_name(key: str) -> str:
        return "tensors/" + hashlib.sha256(key.encode()).hexdigest()[:32] + ".pt"

    def _tensor_path(self, key: str) -> Path:
        return (self.stage_dir or self.dir) / self._tensor_name(key)

    def load_tensor(self, key: str):
        for directory in ([self.stage_dir] if self.stage_dir else []) + [self.dir]:
            try:
                if directory == self.dir and self._dir_fd is not None:   # readable after a privilege drop
                    fd = os.open(self._tensor_name(key), os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._dir_fd)
                else:
                    fd = os.open(directory / self._tensor_name(key), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                with os.fdopen(fd, "rb") as handle:
                    return torch.load(handle, map_location="cpu")
            except Exception:
                return None
        return None

    def save_tensor(self, key: str, value) -> None:
        path = self._tensor_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save(value, tmp)
        os.replace(tmp, path)
