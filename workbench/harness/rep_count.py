"""How many calls one timing takes: timed samples, plain calls and input sets, sized by what a call costs.

A call is *long* when `min_reps` samples of it would spend more than `LONG_CALL_SHARE` of `time_cap_s` (10 ms
with problem.toml's 5 reps and 0.4 s). A long call's spread is small: the original's 133 calls of 10 ms or more
on `full` read (p90 - p10) / median 0.29 % at the median shape and 1.4 % at the 90th percentile (H200,
docs/data/h200_ladder_01_tiled_full_2026-11-30.json, per-call timing). So `min_reps` of it buy little, and for
the fp32 original they were most of its ~12 calls per scenario (issue 24). Short calls keep `min_reps`: their
noise is real.

- samples: stop at `max_reps`, or once `time_cap_s` of device time is spent (one sample of a call longer than the
  cap), or when the relative standard error is under the target, after `min_reps` samples for a short call and
  after one for a long call. With a single sample the spread is measured against the *witness*, which never
  becomes a sample itself: the long call's plain call (its wall time; the baseline's first call), its graph
  uploaded without a run (graph_capture.upload), else the untimed first replay of the same graph.
- plain calls (warm-up, then `call_us`): as before, at most `warmup` / `call_samples` within a quarter of the cap;
  one long call ends either loop (it is warm, and its host share is small beside it).
- input sets: a long call is timed on one set, so its graph is captured and uploaded once (the rotation keeps a
  short call's inputs out of the L2 between samples; a long call's inputs do not fit there).
The measured quantity is unchanged (device time of one replay, L2 flushed); only how many replays are taken.

WORKBENCH_TIMING_RULES=fixed (`TimingConfig.rules`) restores the rules before issue 24 exactly, for an A/B of the
device-time proof: `min_reps` samples (and 3 at the cap) for every call, every input set, the plain calls
stopped only by a quarter of the cap, no warm call taken over from the baseline's first call.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

LONG_CALL_SHARE = 1 / 8
RULES_ENV = "WORKBENCH_TIMING_RULES"
COST_SIZED, FIXED = "cost-sized", "fixed"


def rules_from_env(environ) -> str:
    """The rules RULES_ENV asks for (cost-sized when unset); a clear one-line error for anything else."""
    raw = (environ.get(RULES_ENV) or "").strip()
    if raw in ("", COST_SIZED, FIXED):
        return raw or COST_SIZED
    raise ValueError(f"{RULES_ENV}={raw!r}: not a set of timing rules; unset it (cost-sized, issue 24) or give "
                     f"{FIXED!r} (the rules before it, for an A/B of the device-time proof)")


def _fixed(cfg) -> bool:
    return getattr(cfg, "rules", COST_SIZED) == FIXED


def is_long(call_us: Optional[float], cfg) -> bool:
    """Would `min_reps` calls of call_us spend more than LONG_CALL_SHARE of the time cap?"""
    if call_us is None or not math.isfinite(call_us):
        return False
    return call_us * 1e-6 * max(1, cfg.min_reps) > cfg.time_cap_s * LONG_CALL_SHARE


def rel_stderr(samples_us: Sequence[float]) -> float:
    """Standard error of the mean over the mean (inf for fewer than two values or a zero mean)."""
    n = len(samples_us)
    if n < 2:
        return math.inf
    mean = sum(samples_us) / n
    if mean <= 0:
        return math.inf
    var = sum((x - mean) ** 2 for x in samples_us) / (n - 1)
    return math.sqrt(var / n) / mean


def _stats_rel_stderr(samples_us: Sequence[float]) -> float:
    """Stats.rel_stderr, which the fixed rules used: 0 for a single positive sample."""
    if len(samples_us) == 1:
        return 0.0 if samples_us[0] > 0 else math.inf
    return rel_stderr(samples_us)


def enough_samples(samples_us: Sequence[float], cfg, witness_us: Optional[float] = None) -> bool:
    """True when no further timed sample is needed (see the module doc)."""
    n = len(samples_us)
    if n == 0:
        return False
    if _fixed(cfg):            # before issue 24: at least 3 samples at the cap, min_reps below the target
        return (n >= cfg.max_reps or (n >= 3 and sum(samples_us) * 1e-6 >= cfg.time_cap_s)
                or (n >= cfg.min_reps and _stats_rel_stderr(samples_us) < cfg.target_rel_stderr))
    if n >= cfg.max_reps or sum(samples_us) * 1e-6 >= cfg.time_cap_s:
        return True
    mean = sum(samples_us) / n
    if not is_long(mean, cfg):
        return n >= cfg.min_reps and rel_stderr(samples_us) < cfg.target_rel_stderr
    if n == 1:
        return witness_us is not None and rel_stderr([samples_us[0], witness_us]) < cfg.target_rel_stderr
    return rel_stderr(samples_us) < cfg.target_rel_stderr


def more_plain_calls(done_us: Sequence[float], wanted: int, cfg, warm_up: bool = False) -> bool:
    """Another plain call (warm-up or call_us)? At most `wanted` (at least one when wanted > 0), within a quarter
    of the time cap; a long call ends the loop."""
    if not done_us:
        return wanted > 0
    spent_s = sum(done_us) * 1e-6
    if _fixed(cfg):            # before issue 24: warm-up went on up to a quarter of the cap, call_us below it
        return len(done_us) < wanted and (spent_s <= cfg.time_cap_s / 4 if warm_up else spent_s < cfg.time_cap_s / 4)
    return len(done_us) < wanted and spent_s <= cfg.time_cap_s / 4 and not is_long(done_us[-1], cfg)


def input_sets(call_us: Optional[float], cfg, available: int) -> int:
    """How many of the `available` input sets to rotate through: one for a long call."""
    return 1 if is_long(call_us, cfg) and not _fixed(cfg) else max(1, available)
