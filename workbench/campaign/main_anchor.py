"""A campaign's figures against its problem's main anchor: the anchor's name in print, a run's figures, and the
best-so-far state read back from records written before campaigns knew their problem's main anchor.

Attention's main anchor is FA3 and the GEMM's is cuBLAS (each problem.toml's `[anchors] main`). Events, snapshots
and sessions rows carry `main_anchor` with `geomean_vs_main` / `best_vs_main`; they keep `geomean_vs_fa3` /
`best_vs_fa3` as well, because attention's readers (the report, the notebook, older tools) read those. A record
without `main_anchor` was written by attention's campaigns: it reads as FA3, its `best_vs_fa3` as its best.
"""
from __future__ import annotations

import math
from typing import Optional

# the anchors' names in print live with the trace tables (the report reads them too); re-exported here
from workbench.traces.anchor_names import LABELS, LEGACY_MAIN, label  # noqa: F401


def finite(value) -> Optional[float]:
    """value as a float when it is a finite number, else None (NaN, inf, text, None)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def run_figures(result, main: str) -> dict:
    """A harness run's geomeans against the original, FA3 and the main anchor (None where it has none)."""
    variables = result.stop_variables() if result.rows else {}
    return {"geomean_vs_original": finite(variables.get("geomean_vs_original")),
            "geomean_vs_fa3": finite(variables.get("geomean_vs_fa3")),
            "geomean_vs_main": finite(variables.get(f"geomean_vs_{main}")) if main else None}


def recorded_best(record: dict, main: str) -> Optional[float]:
    """The best against `main` a snapshot, status or sessions row recorded. One written before campaigns named
    their main anchor (no main_anchor, or a null one) is attention's: its best_vs_fa3. One of another main anchor
    than `main` has no figure for it."""
    recorded = record.get("main_anchor")
    if not isinstance(recorded, str) or not recorded:
        return record.get("best_vs_fa3") if main == LEGACY_MAIN else None
    return record.get("best_vs_main") if recorded == main else None


# a campaign's best-so-far attributes (the built-in loop's and an outside agent's campaign's alike)
BEST_FIELDS = ("best_vs_original", "best_vs_fa3", "best_vs_main", "best_sha", "main_anchor")


def best_state(campaign) -> dict:
    """The campaign's best so far, as its snapshots and status carry it."""
    return {name: getattr(campaign, name) for name in BEST_FIELDS}


def take_best(campaign, figures: dict, sha: str) -> None:
    """The run of `figures` (run_figures) and kernel `sha` is the campaign's new best."""
    campaign.best_vs_original, campaign.best_vs_fa3 = figures["geomean_vs_original"], figures["geomean_vs_fa3"]
    campaign.best_vs_main, campaign.best_sha = figures["geomean_vs_main"], sha
