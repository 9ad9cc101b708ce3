"""One harness run, one row set: deciding which sightings of harness output are the same run.

**One run, one row set** (`RunMerger`). The same run is often seen more than once: its stdout carries both the
summary and the result line, the agent reads the JSON back, a sub-agent quotes its figures. Two sightings are
one run when both carry an eval id and the ids are equal; when either lacks one, when they agree on every
identity field both know (kernel sha — a printed 12-character prefix matches the full sha —, suite, status) and
on every overall geomean both print (to the precision printed; at least one, or a known kernel sha for runs with
none), and the later came within `SAME_RUN_WINDOW_S` of the run's previous sighting (equal eval ids need no
window: a JSON file read back a day later is still that run). Two sightings of the same
shape in one tool output are never one run unless their eval ids are equal. The run keeps the rows of its most
detailed sighting (per-scenario JSON, then result line, then text); its `ts` and `call_id` are those of its first
sighting, when the result first appeared. A repeated run of an unchanged kernel whose figures come out identical
(a timing cache) within the window and without eval ids is counted once: the rule cannot tell them apart.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

SAME_RUN_WINDOW_S = 600.0
SHA_PREFIX_MIN = 8          # a printed sha shorter than this never matches by prefix


@dataclass
class Sighting:
    form: str                       # result_line | json | text
    pos: int                        # offset in the tool output
    rows: list                      # evaluation rows without session, eval id, call, time and source
    eval_id: str | None = None
    kernel_sha: str | None = None
    suite: str | None = None
    status: str | None = None       # the suite's: evaluated | build_failed | static_only | ... (None: not shown)
    geomeans: dict = field(default_factory=dict)    # overall, by reference name: {"original": 3.9, "fa3": None}
    decimals: int | None = None     # geomeans printed to this many decimals; None: full precision
    detail: int = 1

    @property
    def printed(self) -> dict:
        return {k: v for k, v in self.geomeans.items() if v is not None}


def _close(a, b, decimals) -> bool:
    tolerance = 0.5 * 10 ** -decimals + 1e-9 if decimals is not None else 1e-9 * max(1.0, abs(a))
    return abs(a - b) <= tolerance


def _sha_agrees(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return True
    short, long_ = sorted((a, b), key=len)
    return short == long_ or (len(short) >= SHA_PREFIX_MIN and long_.startswith(short))


def same_run(a: Sighting, b: Sighting) -> bool:
    """The identity rule of the module docstring, without the time window."""
    if a.eval_id and b.eval_id:
        return a.eval_id == b.eval_id
    if not _sha_agrees(a.kernel_sha, b.kernel_sha):
        return False
    for x, y in ((a.suite, b.suite), (a.status, b.status)):
        if x and y and x != y:
            return False
    shared = set(a.printed) & set(b.printed)
    if not shared:
        return not a.printed and not b.printed and bool(a.kernel_sha and b.kernel_sha)
    decimals = [d for d in (a.decimals, b.decimals) if d is not None]
    places = min(decimals) if decimals else None
    return all(_close(a.printed[k], b.printed[k], places) for k in shared)


def absorb(keep: Sighting, other: Sighting) -> Sighting:
    """keep, with what only other knew (eval id, full sha, precise geomeans) filled in."""
    keep.eval_id = keep.eval_id or other.eval_id
    if other.kernel_sha and len(other.kernel_sha) > len(keep.kernel_sha or ""):
        keep.kernel_sha = other.kernel_sha
        for row in keep.rows:
            row["kernel_sha"] = other.kernel_sha
    keep.suite = keep.suite or other.suite
    keep.status = keep.status or other.status
    if keep.decimals is not None and other.printed and (other.decimals is None or other.decimals > keep.decimals):
        keep.geomeans = {**keep.geomeans, **other.printed}
        keep.decimals = other.decimals
        for row in keep.rows:           # text rows are suite-level: carry the precise figures
            row.update(geomean_vs_original=keep.geomeans.get("original"), geomean_vs_fa3=keep.geomeans.get("fa3"))
    return keep


@dataclass
class _Run:
    best: Sighting
    first: dict         # call_id, ts, source_file, source_line, index of the first sighting
    best_where: dict
    last_ts: object
    number: int = 0     # creation order: of several runs a sighting matches, the newest wins


def _tolerance(value: float, run_decimals, sighting_decimals) -> float:
    """The widest difference `_close` can accept between a run's figure and value (a superset bound)."""
    places = [d for d in (run_decimals, sighting_decimals) if d is not None]
    if places:
        return 0.5 * 10 ** -min(places) + 1e-9
    return 2e-9 * max(1.0, abs(value)) + 1e-9


def _sha_key(sha: str):
    """Two shas that `_sha_agrees` (both known) share this key: their first SHA_PREFIX_MIN characters."""
    return sha[:SHA_PREFIX_MIN] if len(sha) >= SHA_PREFIX_MIN else ("short", sha)


class RunIndex:
    """Which earlier runs a sighting can be the same run as, without looking at every run: a superset of the runs
    `same_run` accepts, found by eval id, by each printed geomean (sorted values per geomean name and printed
    precision, searched within the widest tolerance), or, for runs that print no figure, by kernel sha. A run is
    indexed again whenever its best sighting changes; stale entries only add candidates, which `same_run` then
    refuses."""

    def __init__(self):
        self.by_eval_id: dict = {}
        self.by_figure: dict = {}           # (geomean name, decimals) -> sorted [(value, run number)]
        self.by_sha: dict = {}              # sha key -> [run number] of runs that print no figure
        self._entries: dict = {}            # run number -> index entries already made

    def add(self, run: _Run) -> None:
        s, done = run.best, self._entries.setdefault(run.number, set())
        entries = [("eval", s.eval_id)] if s.eval_id else []
        entries += [("fig", name, s.decimals, v) for name, v in s.printed.items() if math.isfinite(v)]
        if not s.printed and s.kernel_sha:
            entries.append(("sha", _sha_key(s.kernel_sha)))
        for entry in entries:
            if entry in done:
                continue
            done.add(entry)
            if entry[0] == "eval":
                self.by_eval_id.setdefault(entry[1], []).append(run.number)
            elif entry[0] == "fig":
                bisect.insort(self.by_figure.setdefault(entry[1:3], []), (entry[3], run.number))
            else:
                self.by_sha.setdefault(entry[1], []).append(run.number)

    def candidates(self, s: Sighting) -> set:
        found = set(self.by_eval_id.get(s.eval_id, ())) if s.eval_id else set()
        for name, value in s.printed.items():
            if not math.isfinite(value):
                continue
            for (indexed_name, decimals), values in self.by_figure.items():
                if indexed_name != name:
                    continue
                tol = _tolerance(value, decimals, s.decimals)
                lo = bisect.bisect_left(values, (value - tol, -1))
                hi = bisect.bisect_right(values, (value + tol, math.inf))
                found.update(number for _, number in values[lo:hi])
        if not s.printed and s.kernel_sha:
            found.update(self.by_sha.get(_sha_key(s.kernel_sha), ()))
        return found


class RunMerger:
    """Feed tool outputs in time order; `rows(session_id)` gives one row set per run (module docstring).
    Each sighting is compared only with the runs `RunIndex` offers, so a session's import time grows with its
    runs, not with their square; `comparisons` counts the `same_run` checks made."""

    def __init__(self, window_s: float = SAME_RUN_WINDOW_S):
        self.window_s = window_s
        self.runs: list[_Run] = []
        self.index = RunIndex()
        self.sightings = 0
        self.seen_again = 0         # sightings that were a run already counted (read-backs, quotes)
        self.comparisons = 0

    def _within(self, run: _Run, ts) -> bool:
        if ts is None or run.last_ts is None:
            return True
        return abs((ts - run.last_ts).total_seconds()) <= self.window_s

    def _match(self, s: Sighting, ts, touched: list) -> _Run | None:
        """The newest run that s is a sighting of (module docstring), or None."""
        for number in sorted(self.index.candidates(s), reverse=True):
            r = self.runs[number]
            if any(r is t for t in touched):
                continue
            self.comparisons += 1
            if (bool(r.best.eval_id and s.eval_id) or self._within(r, ts)) and same_run(r.best, s):
                return r
        return None

    def add(self, sightings: list[Sighting], *, call_id, ts, source_file, source_line) -> None:
        """The sightings of one tool output (harness_output.find_sightings), in order."""
        touched = []            # runs of this output: another sighting in it is another run
        for index, s in enumerate(sightings):
            self.sightings += 1
            where = dict(call_id=call_id, ts=ts, source_file=source_file, source_line=source_line, index=index)
            run = self._match(s, ts, touched)
            if run is None:
                self.runs.append(_Run(best=s, first=where, best_where=where, last_ts=ts, number=len(self.runs)))
                self.index.add(self.runs[-1])
                touched.append(self.runs[-1])
                continue
            touched.append(run)
            self.seen_again += 1
            run.last_ts = ts if ts is not None else run.last_ts
            if s.detail > run.best.detail:
                run.best, run.best_where = absorb(s, run.best), where
            else:
                absorb(run.best, s)
            self.index.add(run)

    def rows(self, session_id: str) -> list[dict]:
        out = []
        for run in self.runs:
            first = run.first
            eval_id = run.best.eval_id or f"{first['call_id'] or first['source_line']}#{first['index']}"
            for row in run.best.rows:
                out.append(dict(row, session_id=session_id, eval_id=eval_id, call_id=first["call_id"],
                                ts=first["ts"], source_file=run.best_where["source_file"],
                                source_line=run.best_where["source_line"]))
        return out
