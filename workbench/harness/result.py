"""Result records of the harness: timing stats, one scenario's result, one suite's result.

These are plain dataclasses that round-trip through JSON, because results cross a process boundary (the
evaluation worker prints them) and land in trace tables and notebooks.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from workbench.harness.scenarios import CATEGORY_NAMES, geomean

ANCHORS = ("fa3", "fa4", "cudnn", "fa2")      # attention's; another problem's are its problem.toml [anchors]
BASELINE = "original"

# status of one scenario
PASSED, FAILED, UNSUPPORTED, SKIPPED, STATIC_ONLY = "passed", "failed", "unsupported", "skipped", "static_only"
# what `workbench check` (plain or --campaign) exits with: the stop condition met, the candidate failed, bad input
# or environment, evaluated but the stop condition not met
EXIT_MET, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_MET = 0, 1, 2, 3


@dataclass
class Stats:
    """Timing of one implementation on one scenario, in microseconds.

    median/p10/p90/mean/stderr/n describe the device-time samples; `method` says how they were taken
    (timing.GRAPH_REPLAY, GRAPH_REPLAY_OUTER or EVENTS_DELAYED; "" for figures recorded before device timing,
    when every sample was events around the Python call). `call_us` is the median wall time of one plain call
    until its GPU work is done (host overhead included): reported beside the device time, never in a geomean.
    `note` says why a call could not be captured into a CUDA graph, when it could not. `clock_mhz`: the SM clock
    around the samples (clocks are not locked on the machines this runs on; a row timed at a low clock says so)."""
    median_us: float
    p10_us: float
    p90_us: float
    mean_us: float
    stderr_us: float
    n: int
    method: str = ""
    call_us: Optional[float] = None
    note: str = ""
    clock_mhz: Optional[float] = None   # the SM clock read just before and after the samples (mean; GPU only)
    # torch.profiler's summed device time of replays profiled right after the samples, in the same state (median;
    # only when the timer was asked to, WORKBENCH_TIMING_PROFILE: the device-time proof; never in a geomean)
    profiled_us: Optional[float] = None
    # with the proof's switch only: medians of a few extra replays taken after the samples in other patterns
    # (bare: no before/after/prime; before: before(i) only; checked: before and after, no prime), to locate where
    # a difference between the samples and the profiler comes from. Never used for anything but printing.
    profile_detail: Optional[dict] = None

    @classmethod
    def from_samples(cls, samples_us: list[float]) -> "Stats":
        xs = sorted(samples_us)
        n = len(xs)
        if n == 0:
            raise ValueError("no timing samples")

        def pct(p: float) -> float:
            pos = (n - 1) * p
            lo, hi = math.floor(pos), math.ceil(pos)
            return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

        mean = sum(xs) / n
        var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
        return cls(median_us=pct(0.5), p10_us=pct(0.1), p90_us=pct(0.9), mean_us=mean,
                   stderr_us=math.sqrt(var / n), n=n)

    @property
    def rel_stderr(self) -> float:
        return self.stderr_us / self.mean_us if self.mean_us > 0 else float("inf")

    @property
    def rel_spread(self) -> float:
        return (self.p90_us - self.p10_us) / self.median_us if self.median_us > 0 else float("inf")


@dataclass
class ScenarioResult:
    scenario: dict                      # Scenario.to_dict()
    status: str                         # passed | failed | unsupported | skipped | static_only
    reason: str = ""                    # failure code, see verify.REASONS
    detail: str = ""                    # one human-readable line
    rel_l2_err: Optional[float] = None
    max_abs_err: Optional[float] = None
    lse_err: Optional[float] = None
    stats: Optional[Stats] = None       # the candidate's timing
    reference_stats: dict = field(default_factory=dict)   # "original"/anchor name -> Stats
    reference_errors: dict = field(default_factory=dict)  # anchor name -> rel L2 error vs fp32, or a note
    flags: list = field(default_factory=list)
    floor_us: Optional[float] = None    # physical floor: max(FLOPs / bf16 ceiling, bytes / HBM bandwidth)
    resumed_from: str = ""              # the interrupted run (its eval id) this row was judged in (resume_rows.py)

    @property
    def name(self) -> str:
        return self.scenario["name"]

    @property
    def category(self) -> str:
        return self.scenario.get("category", "user")

    def flops(self) -> float:
        from workbench.harness.problems import scenario_from_dict
        return scenario_from_dict(self.scenario).flops()

    @property
    def tflops(self) -> Optional[float]:
        if self.stats is None:
            return None
        return self.flops() / (self.stats.median_us * 1e-6) / 1e12

    def speedup(self, against: str) -> Optional[float]:
        """Other's median over ours; ours is never counted as faster than the physical floor, so one impossible
        time (a skipped launch, a broken timer) cannot carry a geomean. Such rows are flagged as well."""
        other = self.reference_stats.get(against)
        if self.stats is None or other is None or self.status != PASSED:
            return None
        return other.median_us / max(self.stats.median_us, self.floor_us or 0.0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ScenarioResult":
        data = dict(data)
        data["stats"] = Stats(**data["stats"]) if data.get("stats") else None
        data["reference_stats"] = {k: Stats(**v) for k, v in (data.get("reference_stats") or {}).items()}
        return cls(**data)


@dataclass
class SuiteResult:
    kernel_path: str
    kernel_sha: str
    suite: str
    status: str                         # evaluated | build_failed | forbidden | static_only | crashed | error
    rows: list = field(default_factory=list)    # list[ScenarioResult]
    error: str = ""                     # one line when status is not "evaluated"
    build: dict = field(default_factory=dict)   # BuildResult.to_dict(): resource report, warnings
    gpu: str = ""
    versions: dict = field(default_factory=dict)
    flags: list = field(default_factory=list)   # suite-level suspicion flags
    stop_expr: str = ""
    stop_met: Optional[bool] = None
    wall_s: float = 0.0
    eval_id: str = ""
    problem: str = "attn_fwd"           # the problem folder's name (harness/problems.py)
    resumed_rows: int = 0               # rows reused from an interrupted run of the same check (resume_rows.py)
    resumed_from: str = ""              # when that run (or those runs) started

    # ---- aggregate figures (computed, not stored) -------------------------------------------------
    @property
    def all_correct(self) -> bool:
        return self.status == "evaluated" and bool(self.rows) and all(r.status == PASSED for r in self.rows)

    def counts(self) -> dict:
        out = {PASSED: 0, FAILED: 0, UNSUPPORTED: 0, SKIPPED: 0, STATIC_ONLY: 0}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def geomean_vs(self, against: str, category: Optional[str] = None) -> float:
        rows = [r for r in self.rows if category is None or r.category == category]
        return geomean(r.speedup(against) for r in rows)

    def geomeans(self) -> dict:
        """{'overall': {'original': x, 'fa3': y, ...}, 'A': {...}, ...} for every baseline/anchor timed."""
        names = sorted({k for r in self.rows for k in r.reference_stats})
        cats = [c for c in _category_names(self.problem) if any(r.category == c for r in self.rows)]
        out = {"overall": {n: self.geomean_vs(n) for n in names}}
        for c in cats:
            out[c] = {n: self.geomean_vs(n, c) for n in names}
        return out

    def stop_variables(self) -> dict:
        """The names a stop predicate may use (see stop.py)."""
        counts = self.counts()
        variables = {
            "all_correct": self.all_correct,
            "n_passed": counts[PASSED],
            "n_failed": counts[FAILED],
            "n_unsupported": counts[UNSUPPORTED],
            "n_scenarios": len(self.rows),
            "geomean_vs_original": self.geomean_vs(BASELINE),
            "min_tflops": min((r.tflops for r in self.rows if r.tflops), default=0.0),
        }
        for anchor in ANCHORS:
            variables[f"geomean_vs_{anchor}"] = self.geomean_vs(anchor)
        speedups = [r.speedup("fa3") for r in self.rows if r.speedup("fa3")]
        variables["min_vs_fa3"] = min(speedups) if speedups else float("nan")
        timed = {k for r in self.rows for k in r.reference_stats}
        for anchor in sorted((timed | set(_anchor_names(self.problem))) - {BASELINE, *ANCHORS}):
            variables[f"geomean_vs_{anchor}"] = self.geomean_vs(anchor)     # another problem's anchors
            speedups = [r.speedup(anchor) for r in self.rows if r.speedup(anchor)]
            variables[f"min_vs_{anchor}"] = min(speedups) if speedups else float("nan")
        return variables

    # ---- serialisation ------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = asdict(self)
        data["all_correct"] = self.all_correct
        data["geomeans"] = self.geomeans()
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict) -> "SuiteResult":
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        data["rows"] = [ScenarioResult.from_dict(r) for r in data.get("rows", [])]
        return cls(**data)

    def to_frame(self):
        """One row per scenario: the DataFrame every table and plot is drawn from."""
        import pandas as pd

        records = []
        for r in self.rows:
            rec = {"scenario": r.name, "category": r.category, "status": r.status, "reason": r.reason,
                   "detail": r.detail, "rel_l2_err": r.rel_l2_err, "max_abs_err": r.max_abs_err,
                   "us": r.stats.median_us if r.stats else None, "tflops": r.tflops,
                   "call_us": r.stats.call_us if r.stats else None,
                   "timing_method": r.stats.method if r.stats else None,
                   "flags": ",".join(r.flags),
                   **_shape_columns(r.scenario)}
            for name, st in r.reference_stats.items():
                rec[f"us_{name}"] = st.median_us
                rec[f"call_us_{name}"] = st.call_us
                rec[f"tflops_{name}"] = r.flops() / (st.median_us * 1e-6) / 1e12
                rec[f"x_{name}"] = r.speedup(name)
            records.append(rec)
        return pd.DataFrame.from_records(records)


def _shape_columns(scenario: dict) -> dict:
    """A frame's shape columns: attention's four, or every number of another problem's scenario."""
    if "head_dim" in scenario:
        return {k: scenario[k] for k in ("head_dim", "causal", "seqlen_q", "seqlen_k")}
    return {k: v for k, v in scenario.items() if k not in ("name", "category", "problem", "dtype")}


def _anchor_names(problem: str) -> tuple:
    """The anchors the problem knows (none beyond attention's when it is attention or unknown here)."""
    from workbench.harness import problems

    if not problem or problem == problems.DEFAULT_PROBLEM:
        return ()
    try:
        return problems.load(problem).anchors
    except problems.ProblemError:
        return ()


def _category_names(problem: str) -> dict:
    """The problem's categories in report order (attention's when the problem is unknown here)."""
    from workbench.harness import problems

    if not problem or problem == problems.DEFAULT_PROBLEM:
        return CATEGORY_NAMES
    try:
        return problems.load(problem).category_names
    except problems.ProblemError:
        return CATEGORY_NAMES


def exit_code(result: SuiteResult) -> int:
    """The exit status a command reports for one harness run (EXIT_MET, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_MET)."""
    if result.status in ("build_failed", "forbidden"):
        return EXIT_FAILED
    if result.status in ("static_only", "error", "crashed"):
        return EXIT_USAGE if result.status != "crashed" else EXIT_FAILED
    if any(r.status == FAILED for r in result.rows):
        return EXIT_FAILED
    return EXIT_MET if result.stop_met else EXIT_NOT_MET


@dataclass
class CheckRequest:
    """Everything one harness run needs; crosses the process boundary to the worker as JSON."""
    kernel_path: str
    suite: str = "dev26"                      # suite name or CSV path
    baseline_path: Optional[str] = None       # default: kernels/attn_fwd/original.cu
    anchors: tuple = ("fa3",)                 # any of ANCHORS that is importable is timed
    stop_expr: str = ""                       # e.g. "all_correct and geomean_vs_fa3 >= 1.0"
    previous_best: Optional[float] = None     # best geomean vs original so far (for the >1.5x jump flag)
    arch: str = "sm_90a"
    build_timeout_s: float = 300.0
    scenario_timeout_s: float = 120.0         # hard limit per scenario inside the worker
    cache_dir: Optional[str] = None           # build and timing caches (default ~/.cache/workbench)
    include_root: Optional[str] = None        # the only folder the kernel's own headers may come from (its folder)
    gpu_index: int = 0
    fail_fast: bool = False                   # stop at the first failing scenario (the rest: skipped)
    timing: bool = True                       # False: verify only (anchors still checked for correctness)
    problem: str = ""                         # a problem name or folder; '' = the kernel's folder's, else attention
    resume: bool = True                       # reuse an interrupted run's rows of this same check (resume_rows.py)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["anchors"] = list(self.anchors)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CheckRequest":
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        data["anchors"] = tuple(data.get("anchors", ()))
        return cls(**data)
