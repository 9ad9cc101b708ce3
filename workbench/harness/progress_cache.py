"""The parent's side of a run's timings while its worker runs: which (implementation, scenario) timings the run
needs and which the cache already holds, the merge of what a contained worker stages as it is made, and the
ETA on the progress line.

The trust boundary stays where it was: the worker writes only its private staging folder; the parent merges an
entry only when its checksum holds, its shape is an entry's and its key is one this run may write: the
baseline's or a loaded anchor's, for one of this run's scenarios, on the GPU and versions the worker reported
before any candidate code ran (its start event). Anything else in the staging folder is ignored.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from workbench.harness import cache_file
from workbench.harness.eta import Estimator, format_eta
from workbench.harness.scenarios import Scenario
from workbench.harness.staged_cache import StagedMerger
from workbench.harness.timing_cache import anchor_impl, cache_env, entry_key, original_impl


def expected_impls(job: dict, versions: dict, missing: dict) -> dict[str, str]:
    """Role (original, fa3, ...) -> cache implementation id, for what this run times and may cache."""
    impls = {}
    request, baseline, candidate = job.get("request", {}), job.get("baseline"), job.get("candidate")
    if request.get("timing", True) and baseline and not (candidate and candidate.get("sha") == baseline["sha"]):
        impls["original"] = original_impl(baseline["sha"])
    for name in request.get("anchors", ()):
        version = versions.get(f"anchor_{name}")
        if name not in missing and version is not None and request.get("timing", True):
            impls[name] = anchor_impl(name, version)
    return impls


class ProgressCache:
    def __init__(self, job: dict, scenarios: list[Scenario], cache_dir: Path, staged: Optional[Path]):
        self.job, self.scenarios, self.cache_dir, self.staged = job, scenarios, Path(cache_dir), staged
        self.keys: dict[str, tuple[str, str]] = {}       # cache key -> (role, scenario name)
        self.cached_before: dict[str, int] = {}
        self.timed: dict[str, int] = {}
        self.timed_s: dict[str, float] = {}
        self.rows: dict[str, int] = {}          # role -> scenarios whose output rows were recomputed (not timed)
        self.rows_s: dict[str, float] = {}
        self.estimator: Optional[Estimator] = None
        self.merger: Optional[StagedMerger] = None
        self.begun_at: Optional[float] = None

    def start(self, event: dict) -> list[str]:
        """The worker's start event (GPU, versions, missing anchors): lines saying what is cached already."""
        impls = expected_impls(self.job, event.get("versions", {}), event.get("missing_anchors", {}))
        env = cache_env(event.get("gpu", ""), event.get("versions", {}))
        self.keys = {entry_key(impl, s.key, env): (role, s.name)
                     for role, impl in impls.items() for s in self.scenarios}
        on_disk = cache_file.read_entries(self.cache_dir)
        pending: dict[str, set] = {s.name: set() for s in self.scenarios}
        self.cached_before = {role: 0 for role in impls}
        for key, (role, name) in self.keys.items():
            if key in on_disk:
                self.cached_before[role] += 1
            else:
                pending[name].add(role)
        self.estimator = Estimator(self.scenarios, pending)
        if self.staged is not None:
            self.merger = StagedMerger(self.staged, self.cache_dir, accept_key=self.keys.__contains__)
        if not impls:
            return []
        total = len(self.scenarios)
        parts = ", ".join(f"{role} {n}/{total}" for role, n in self.cached_before.items())
        return [f"timing cache: {sum(self.cached_before.values())} of {len(impls) * total} baseline and anchor "
                f"timings cached already ({parts})"]

    def skip(self, names) -> None:
        """Scenarios an interrupted run judged (resume_rows.py): done already, so the ETA prices them at nothing."""
        for name in names:
            if self.estimator is not None:
                self.estimator.left.pop(name, None)

    def merge(self) -> None:
        if self.merger is not None:
            self.merger.merge()

    def begin(self) -> None:
        self.begun_at = time.monotonic()

    def done(self, name: str, spent: dict, rows_s: Optional[dict] = None) -> str:
        """A scenario's result arrived: merge what it staged, and return the text for the end of its progress
        line: the ETA, the seconds the baseline's output rows took where they were recomputed (its timing cached:
        no timing, so not `timed now`; the ETA counts them with the rest), then the scenario's wall seconds and
        what it timed afresh (`wall_and_timed`)."""
        self.merge()
        spent, rows_s = _seconds(spent), _seconds(rows_s)
        for role, seconds in spent.items():
            self.timed[role] = self.timed.get(role, 0) + 1
            self.timed_s[role] = self.timed_s.get(role, 0.0) + float(seconds)
        for role, seconds in rows_s.items():
            self.rows[role] = self.rows.get(role, 0) + 1
            self.rows_s[role] = self.rows_s.get(role, 0.0) + seconds
        rows = "rows recomputed " + ", ".join(f"{r} {v:.1f} s" for r, v in rows_s.items()) if rows_s else ""
        if self.estimator is None:
            return ""
        wall = time.monotonic() - self.begun_at if self.begun_at is not None else 0.0
        self.estimator.done(name, wall, spent)
        self.begun_at = None
        eta = format_eta(self.estimator.seconds_left()) if self.estimator.left else ""
        return "  ".join(part for part in (eta, rows, wall_and_timed(wall, spent)) if part)

    def finish(self) -> None:
        """After the worker is gone: the last merge, then the journal folded into the snapshot."""
        self.merge()
        try:
            cache_file.compact(self.cache_dir)
        except OSError:
            pass                      # a cache that cannot be written is only slower next time

    def summary(self) -> dict:
        return {"cached_before": dict(self.cached_before), "timed": dict(self.timed),
                "timed_s": {k: round(v, 1) for k, v in self.timed_s.items()},
                "rows": dict(self.rows), "rows_s": {k: round(v, 1) for k, v in self.rows_s.items()}}


def _seconds(raw) -> dict[str, float]:
    return {k: float(v) for k, v in (raw if isinstance(raw, dict) else {}).items()
            if isinstance(k, str) and isinstance(v, (int, float)) and v >= 0}


def wall_and_timed(wall_s: float, spent: dict) -> str:
    """'(4.1 s; timed now original 2.9 s, cudnn 0.8 s)': a scenario's wall time and the seconds each baseline or
    anchor timed afresh took in it; the rest is the candidate's build share, verification, timing and references.
    A killed run's log says from these where its time went (scripts/coldrun.py reads them back: TIMED_NOW)."""
    timed = ", ".join(f"{role} {seconds:.1f} s" for role, seconds in spent.items())
    return f"({wall_s:.1f} s" + (f"; timed now {timed})" if timed else ")")


def summary_line(summary: dict) -> str:
    """One line from ProgressCache.summary(): what this run timed (and how long it took), what was cached."""
    before, timed, seconds = (summary.get(k, {}) for k in ("cached_before", "timed", "timed_s"))
    if not before:
        return ""
    now = ", ".join(f"{role} {timed.get(role, 0)} ({seconds.get(role, 0.0):.1f} s)" for role in before)
    return f"timing cache: timed now {now}; cached before: " + ", ".join(f"{r} {n}" for r, n in before.items())


def rows_line(summary: dict) -> str:
    """'baseline rows: original recomputed for 181 scenarios (34.8 s), its timings cached': where the cache held
    the baseline's timings but not its output rows, they were recomputed by one call per scenario; no timing."""
    rows, seconds = summary.get("rows", {}), summary.get("rows_s", {})
    if not rows:
        return ""
    return "baseline rows: " + ", ".join(f"{role} recomputed for {n} scenarios ({seconds.get(role, 0.0):.1f} s)"
                                         for role, n in rows.items()) + ", its timings cached"
