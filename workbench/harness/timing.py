"""Timing: CUDA events around each launch, L2 flushed before every timed launch, rotating input sets,
device-wide synchronize after each sample, repeated until the standard error is small or a time cap is hit.

Every timed number is a `Stats` (median, p10, p90, mean, std-err, n); nothing else is reported.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from workbench.harness.result import Stats


@dataclass
class TimingConfig:
    min_reps: int = 5
    max_reps: int = 100
    target_rel_stderr: float = 0.01
    time_cap_s: float = 0.4
    warmup: int = 2
    input_sets: int = 2
    l2_flush_bytes: int = 256 << 20
    noisy_rel_spread: float = 0.10

    @classmethod
    def from_problem(cls, section: dict) -> "TimingConfig":
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})


class Timer:
    def __init__(self, device: str, cfg: TimingConfig):
        self.device, self.cfg = device, cfg
        self.cuda = device.startswith("cuda")
        self.flush_buffer = torch.empty(cfg.l2_flush_bytes // 4, dtype=torch.int32, device=device) if self.cuda else None

    def _flush_l2(self) -> None:
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        else:
            from workbench.harness import cpu_device
            cpu_device.synchronize()

    def _one(self, launch: Callable[[int], None], index: int, before: Optional[Callable[[int], None]],
             after: Optional[Callable[[int], None]] = None) -> float:
        if before is not None:
            before(index)
        self._flush_l2()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            launch(index)
            end.record()
            torch.cuda.synchronize()   # device-wide: nothing of this sample leaks into the next
            us = start.elapsed_time(end) * 1000.0
        else:
            self._sync()
            t0 = time.perf_counter()
            launch(index)
            self._sync()
            us = (time.perf_counter() - t0) * 1e6
        if after is not None:
            after(index)
        return us

    def time(self, launch: Callable[[int], None], before: Optional[Callable[[int], None]] = None,
             n_sets: Optional[int] = None, after: Optional[Callable[[int], None]] = None) -> Stats:
        """launch(i) enqueues one call on input set i; before(i) and after(i) run untimed around it
        (new input contents and poisoned outputs before, a check of what the launch wrote after)."""
        cfg = self.cfg
        n_sets = max(1, n_sets or cfg.input_sets)
        warm_s = 0.0
        for i in range(cfg.warmup):
            warm_s += self._one(launch, i % n_sets, before, after) * 1e-6
            if warm_s > cfg.time_cap_s / 4:   # a slow kernel is warm after one call; don't pay for more
                break
        samples: list[float] = []
        spent_s = 0.0
        while len(samples) < cfg.max_reps:
            us = self._one(launch, len(samples) % n_sets, before, after)
            samples.append(us)
            spent_s += us * 1e-6
            n = len(samples)
            if n >= 3 and spent_s >= cfg.time_cap_s:
                break
            if n >= cfg.min_reps and Stats.from_samples(samples).rel_stderr < cfg.target_rel_stderr:
                break
        return Stats.from_samples(samples)
