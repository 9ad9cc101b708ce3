"""A rest before each implementation's timed samples on a long row, so that all of them start from a rested GPU.

Why: under its power limit a Hopper GPU's SM clock on a long call depends on the seconds of work before it. In one
scenario the worker verifies and times the candidate, then the original, then each anchor, so each is timed after
different work. On `full`'s 16k-32k rows that made the same kernel read 0.83-1.06x FA3 from run to run on an H100,
its SM clock 1441 against FA3's 1659 MHz where it read 0.83 (docs/kernel_ladder.md, runs 83 and 88).

With `rest_s` > 0 (problem.toml [timing], or WORKBENCH_TIMING_REST=SECONDS for an A/B) the timer idles the GPU
that long before the timed samples of every implementation timed on a *long row*: a shape whose physical floor
(Problem.floor_us: its FLOPs at the bf16 ceiling or bytes at the HBM rate) is `rest_above_floor_us` or more. The row,
not each call, decides, so the candidate, the original and every anchor of a row rest alike, and the original's
long calls on short rows (it is slow everywhere) cost nothing. Run 96 (H100, 2026-12-07): with 1.5 s on ten such
rows the mean run-to-run move of a row's x FA3 fell from 5.2 % to 1.3 %. A figure taken after a rest is another
measurement: `timing_label` puts the rest into the timing-method part of every cache key.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional

REST_ENV = "WORKBENCH_TIMING_REST"
MAX_REST_S = 10.0        # a rest longer than this would spend more time than the rows it steadies


def rest_from_env(environ, default_s: float) -> float:
    """The rest REST_ENV asks for (default_s when unset); a clear one-line error for anything else."""
    raw = (environ.get(REST_ENV) or "").strip()
    if not raw:
        return default_s
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (0.0 <= seconds <= MAX_REST_S):
        raise ValueError(f"{REST_ENV}={raw!r}: not a rest in seconds; give 0 (no rest) up to {MAX_REST_S:g}, "
                         f"or unset it for problem.toml's [timing] rest_s")
    return seconds


def rest_for_row_s(floor_us: Optional[float], cfg) -> float:
    """Seconds to idle before each implementation's samples on a row whose physical floor is floor_us (0: none)."""
    if cfg.rest_s <= 0 or floor_us is None or not math.isfinite(floor_us):
        return 0.0
    return cfg.rest_s if floor_us >= cfg.rest_above_floor_us else 0.0


def rest(seconds: float, drain: Callable[[], None], sleep: Callable[[float], None] = time.sleep) -> float:
    """Let queued GPU work finish (drain), then idle `seconds`; returns the seconds rested."""
    if seconds <= 0:
        return 0.0
    drain()
    sleep(seconds)
    return seconds


def timing_label(version: str, cfg) -> str:
    """The timing method's name in cache keys and records: the version, plus the rest when there is one."""
    if cfg.rest_s <= 0:
        return version
    return f"{version}+rest{cfg.rest_s:g}s@floor{cfg.rest_above_floor_us:g}us"
