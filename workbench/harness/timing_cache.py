"""Cache of timings that do not change between candidates: the original kernel's and the anchors'.

Keyed by (implementation and its version/sha, scenario shape, GPU name, software versions, timing method
version), so a campaign does not re-time FA3 on every call, and numbers from different GPUs, library versions
or timing methods never mix (figures cached before device timing, events around the Python call, never match).
Also keeps the original kernel's sampled output rows, which verification compares candidates against.

Every entry is on disk as soon as it is put (cache_file.py: a checksummed journal line), so a killed run keeps
what it timed. In a contained worker (sandbox.py) the cache is read as root before the privilege drop (the folder
stays open as a directory fd, so tensors can still be read through it after) and written to a staging folder in
the private directory (`stage_writes`), which the parent validates and merges while the worker runs: `on_stage`
is called after each staged write (the worker emits an event for it, staged_cache.py merges).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Optional

import torch

from workbench.harness import cache_file
from workbench.harness.build import default_cache_dir
from workbench.harness.result import Stats
from workbench.harness.scenarios import Scenario
from workbench.harness.timing import TIMING_VERSION


def cache_env(gpu: str, versions: dict) -> str:
    """The part of every key that says where and how a figure was measured (GPU, software, timing method)."""
    timing = versions.get("timing") or TIMING_VERSION      # with the rest, when there is one (rest.timing_label)
    return f"{gpu}|torch {versions.get('torch')}|cuda {versions.get('cuda_runtime')}|timing {timing}"


def original_impl(sha: str) -> str:
    return f"original|{sha[:16]}"


def anchor_impl(name: str, version: str) -> str:
    return f"{name}|{version}"


def entry_key(impl: str, scenario_key: str, env: str) -> str:
    return f"{impl}|{scenario_key}|{env}"


class TimingCache:
    def __init__(self, cache_dir: Optional[Path], gpu: str, versions: dict):
        self.dir = Path(cache_dir or default_cache_dir())
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / cache_file.SNAPSHOT
        self.gpu = gpu
        self.env = cache_env(gpu, versions)
        self.entries = cache_file.read_entries(self.dir)
        self.stage_dir: Optional[Path] = None
        self.on_stage: Callable[[], None] = lambda: None
        self.preloaded: dict = {}      # key -> tensor value, read while the files were still readable (preload)
        try:
            self._dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self._dir_fd = None

    def stage_writes(self, directory: Path) -> None:
        """From now on write entries and tensors under `directory`, for the parent to merge."""
        self.stage_dir = Path(directory)
        self.stage_dir.mkdir(parents=True, exist_ok=True)

    def _key(self, impl: str, s: Scenario) -> str:
        return entry_key(impl, s.key, self.env)

    def get(self, impl: str, s: Scenario, with_extra: bool = False):
        entry = self.entries.get(self._key(impl, s))
        if entry is None:
            return None
        stats = Stats(**entry["stats"])
        return (stats, entry.get("extra", {})) if with_extra else stats

    def put(self, impl: str, s: Scenario, stats: Stats, extra: Optional[dict] = None) -> None:
        """Keep the entry, on disk at once: staged for the parent, or appended to the real cache's journal."""
        key, entry = self._key(impl, s), {"stats": dict(stats.__dict__), "extra": extra or {}}
        self.entries[key] = entry
        if self.stage_dir is not None:
            cache_file.append_lines(self.stage_dir / cache_file.JOURNAL, [(key, entry)])
            self.on_stage()
        else:
            cache_file.append_entries(self.dir, {key: entry})

    def flush(self) -> None:
        """Fold the real cache's journal into its snapshot (the staged copy is the parent's to merge)."""
        if self.stage_dir is None:
            cache_file.compact(self.dir)

    @staticmethod
    def _tensor_name(key: str) -> str:
        return "tensors/" + hashlib.sha256(key.encode()).hexdigest()[:32] + ".pt"

    def _tensor_path(self, key: str) -> Path:
        return (self.stage_dir or self.dir) / self._tensor_name(key)

    def preload(self, keys) -> int:
        """Read these tensors now, before a privilege drop: the dropped uid may not be allowed to search the
        cache folder (a 0700 folder), and a comparison row it cannot read would be a baseline call every run."""
        for key in keys:
            if key not in self.preloaded:
                value = self.load_tensor(key)
                if value is not None:
                    self.preloaded[key] = value
        return len(self.preloaded)

    def load_tensor(self, key: str):
        if key in self.preloaded:
            return self.preloaded[key]
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
        tmp = cache_file.tmp_path(path)
        torch.save(value, tmp)
        os.replace(tmp, path)       # whole or absent under its name: a kill mid-write leaves only the .tmp
        if self.stage_dir is not None:
            self.on_stage()
