"""The ceiling's suspicion rules: when a row's TFLOP/s near or above the measured bf16 ceiling is a reason to
look.

`near_ceiling` fires when the candidate runs above `near_ceiling_fraction` of the ceiling *and* is faster than
every anchor measured on that shape, by more than `near_ceiling_over_best_anchor` (problem.toml [flags]; 0: any
faster). A candidate close to the ceiling but slower than FA3 is not suspicious: FA3 got there honestly. Before
(2026-12-01) the rule was the ceiling alone, and on the campaign h200-fa3-race's first evaluation (04 v8 on
`full`) it flagged 22 rows, 21 of which FA3 ran faster (820 TFLOP/s on B_h16x8_d256_c1_s16k, above the
790 TFLOP/s "ceiling"); tests/test_flags.py replays those rows. A shape with no anchor measured keeps the rule of
the ceiling alone: there is nothing to compare with.

`above_ceiling` takes the same rule since 2026-12-03 (session 12): on v17's evaluation it flagged 5 rows at 796-807
TFLOP/s, all d256 shapes on which FA3 ran as fast (x FA3 0.97-1.00), and ncu on the fastest of them measured FA3's
work in FA3's time (the same instruction count within 2 %, every input read from DRAM, 827 against FA3's 832
TFLOP/s): the 790 TFLOP/s figure is a GEMM's, which attention at d256 exceeds honestly. A row above it that is also
faster than every anchor is flagged, as is one with no anchor measured.

Used by check.apply_flags (the row flag) and questions/policy.py (its own TFLOP/s reason counts the same rows).
"""
from __future__ import annotations

from typing import Optional

ORIGINAL = "original"       # the baseline is no anchor: being faster than it says nothing about the ceiling


def best_anchor_us(row) -> Optional[float]:
    """The fastest median of the anchors measured on the row's shape (not the original); None without one."""
    times = [st.median_us for name, st in row.reference_stats.items()
             if name != ORIGINAL and st is not None and st.median_us and st.median_us > 0]
    return min(times) if times else None


def faster_than_best_anchor(row, margin: float = 0.0) -> bool:
    """The candidate's median beats the best anchor's by more than `margin` (0.05: 5 % faster); True when no
    anchor was measured on the shape (nothing says it is honest)."""
    best = best_anchor_us(row)
    if best is None or row.stats is None:
        return True
    return row.stats.median_us * (1.0 + margin) < best


def above_ceiling(row, ceiling_tflops: float, margin: float = 0.0) -> bool:
    """The above_ceiling flag's rule (module doc)."""
    return (row.tflops or 0.0) > ceiling_tflops and faster_than_best_anchor(row, margin)


def near_ceiling(row, ceiling_tflops: float, fraction: float, margin: float = 0.0) -> bool:
    """The near_ceiling flag's rule (module doc)."""
    tflops = row.tflops or 0.0
    return fraction * ceiling_tflops < tflops <= ceiling_tflops and faster_than_best_anchor(row, margin)
