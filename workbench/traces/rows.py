"""The one mapping between a harness run (SuiteResult) and its rows of the `evaluations` trace table, both ways.

Every writer of evaluation rows (`workbench check --traces`, the campaign recorder, the transcript importer)
and every reader that rebuilds a run from them (the replay backend, the campaign watcher) goes through here, so
a column means the same thing whoever wrote it:
  * one row per scenario; a run that judged no scenario (build failed, forbidden source, crashed) is one
    suite-level row: `scenario` null, status `failed` (`static_only` when it built but no GPU judged it), and
    `reason` the run's status;
  * `flags` are the scenario's suspicion flags, `suite_flags` the run's, repeated on every row, as are the suite
    figures (geomeans, all_correct, stop_met); a figure that is not a finite number is null;
  * `problem` is the run's problem (null in rows written before problems: attention's), `main_anchor` its main
    anchor and `speedup_vs_main` / `geomean_vs_main` the figures against it, whichever problem it is.
"""
from __future__ import annotations

import json
import math

from workbench.harness import problems
from workbench.harness.result import ANCHORS, BASELINE, ScenarioResult, Stats, SuiteResult
from workbench.harness.scenarios import load_suite
from workbench.traces.sources import is_standin_result

DETAIL_CHARS = 500
SPEEDUP_NAMES = (BASELINE, *ANCHORS)     # the speedup_vs_* columns


def finite(value):
    """value as a float when it is a finite number, else None (NaN, inf, text, None)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def clip(text, limit: int = DETAIL_CHARS):
    return text if not text or len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def _tflops(row: ScenarioResult):
    if row.stats is None or not finite(row.stats.median_us):
        return None
    try:
        flops = problems.scenario_from_dict(row.scenario).flops()
    except Exception:           # an odd scenario dict (an imported transcript's) has no FLOP count: no figure
        return None
    return finite(flops / (row.stats.median_us * 1e-6) / 1e12)


def _speedup(row: ScenarioResult, name: str):
    try:
        return finite(row.speedup(name))
    except ZeroDivisionError:   # a median of 0 us (an imported transcript's): no speedup, not an infinite one
        return None


def main_anchor(problem: str) -> str:
    try:
        return problems.load(problem or None).main_anchor
    except problems.ProblemError:
        return ""


def scenario_columns(row: ScenarioResult, main: str = "fa3") -> dict:
    """The columns one scenario's result fills (`main`: the problem's main anchor)."""
    st = row.stats
    return dict(scenario=row.name, category=row.category, status=row.status, reason=row.reason or None,
                detail=clip(row.detail or None), rel_l2_err=finite(row.rel_l2_err),
                max_abs_err=finite(row.max_abs_err), us_median=finite(st.median_us) if st else None,
                us_p10=finite(st.p10_us) if st else None, us_p90=finite(st.p90_us) if st else None,
                n_reps=st.n if st else None, timing_method=(st.method or None) if st else None,
                call_us_median=finite(st.call_us) if st else None, tflops=_tflops(row),
                flags=",".join(row.flags) or None, speedup_vs_main=_speedup(row, main) if main else None,
                **{f"speedup_vs_{name}": _speedup(row, name) for name in SPEEDUP_NAMES})


def unjudged_columns(status: str, error: str) -> dict:
    """The one suite-level row of a run that judged no scenario."""
    return dict(scenario=None, status="static_only" if status == "static_only" else "failed", reason=status,
                detail=clip(error or None))


def suite_columns(result: SuiteResult) -> dict:
    """The run's own columns, repeated on each of its rows."""
    variables = result.stop_variables() if result.rows else {}
    main = main_anchor(result.problem)
    return dict(eval_id=result.eval_id or None, kernel_sha=result.kernel_sha, suite=result.suite,
                problem=result.problem or None, main_anchor=main or None,
                geomean_vs_main=finite(variables.get(f"geomean_vs_{main}")) if main else None,
                geomean_vs_original=finite(variables.get("geomean_vs_original")),
                geomean_vs_fa3=finite(variables.get("geomean_vs_fa3")), all_correct=result.all_correct,
                stop_met=result.stop_met, suite_flags=",".join(result.flags) or None, gpu=result.gpu or None,
                versions_json=json.dumps(result.versions, sort_keys=True) if result.versions else None,
                is_standin=is_standin_result(result.kernel_path, result.gpu, result.versions))


def rows_from_result(result: SuiteResult, **keys) -> list[dict]:
    """`evaluations` rows of one harness run; `keys` (session_id, call_id, turn, ts, ...) go on every row and win
    over the run's own columns (a recorder's eval_id and kernel_sha, say)."""
    common = suite_columns(result)
    if not result.rows:
        return [{**common, **unjudged_columns(result.status, result.error), **keys}]
    return [{**common, **scenario_columns(row, common["main_anchor"]), **keys} for row in result.rows]


# ---- the other way: rows (or a transcript's JSON) back to a SuiteResult -----------------------------------------
def stats_from_json(data):
    """Stats from their JSON, or None when there is no finite median; other fields that are missing or not
    numbers are read as the median (percentiles) or as unknown."""
    if not isinstance(data, dict) or finite(data.get("median_us")) is None:
        return None
    median = finite(data["median_us"])
    n = finite(data.get("n"))
    return Stats(median_us=median, p10_us=finite(data.get("p10_us")) or median,
                 p90_us=finite(data.get("p90_us")) or median, mean_us=finite(data.get("mean_us")) or median,
                 stderr_us=finite(data.get("stderr_us")) or 0.0, n=int(n) if n is not None else None,
                 method=str(data.get("method") or ""), call_us=finite(data.get("call_us")))


def scenario_from_json(data: dict) -> ScenarioResult:
    """One scenario's result from JSON as a transcript holds it (any harness version): unknown keys dropped."""
    refs = {str(name): st for name, st in ((n, stats_from_json(v)) for n, v in
                                           (data.get("reference_stats") or {}).items()) if st is not None}
    scenario = data.get("scenario") if isinstance(data.get("scenario"), dict) else {}
    return ScenarioResult(scenario={"name": None, **scenario}, status=str(data.get("status") or ""),
                          reason=str(data.get("reason") or ""), detail=str(data.get("detail") or ""),
                          rel_l2_err=finite(data.get("rel_l2_err")), max_abs_err=finite(data.get("max_abs_err")),
                          stats=stats_from_json(data.get("stats")), reference_stats=refs,
                          flags=[str(f) for f in data.get("flags") or []], floor_us=finite(data.get("floor_us")))


def _num(x, default):
    return default if x is None or x != x else x


def _opt(x):
    return None if x is None or x != x else float(x)


def _text(x) -> str:
    return "" if x is None or x != x else str(x)


def _placeholder(problem: str, name, category: str, shapes: dict) -> dict:
    """A shape for a row whose scenario its suite no longer holds (its FLOPs are not used): attention's smallest;
    for another problem, another shape of the suite renamed, else only the names."""
    if problem != problems.DEFAULT_PROBLEM:
        template = next(iter(shapes.values()), {"problem": problem})
        return {**template, "name": name, "category": category}
    return {"name": name, "batch": 1, "heads_q": 1, "heads_kv": 1, "seqlen_q": 1, "seqlen_k": 1, "head_dim": 64,
            "causal": False, "dtype": "bf16", "category": category}


def result_from_rows(rows, request) -> SuiteResult:
    """Rebuild a SuiteResult from one run's `evaluations` rows (a DataFrame); reference times come back from the
    recorded speedups. A suite-level row (scenario null) is a run that judged nothing: its reason is the status
    (rows recorded before this mapping carried that status in `status` itself)."""
    first = rows.iloc[0]
    problem = _text(getattr(first, "problem", None)) or problems.DEFAULT_PROBLEM
    common = dict(kernel_path=request.kernel_path, kernel_sha=first.kernel_sha, suite=first.suite, problem=problem,
                  gpu=_text(first.gpu), versions=json.loads(_text(first.versions_json) or "{}"),
                  stop_expr=request.stop_expr, flags=[f for f in _text(getattr(first, "suite_flags", "")).split(",")
                                                      if f],
                  stop_met=bool(first.stop_met) if first.stop_met == first.stop_met else None, eval_id="")
    if len(rows) == 1 and not _text(first.scenario):
        status = _text(first.reason) if first.status in ("failed", "static_only") and first.reason else first.status
        return SuiteResult(status=status or "error", error=_text(first.detail), **common)
    try:
        shapes = {s.name: s.to_dict() for s in load_suite(request.suite, problem=problems.load(problem))}
    except Exception:
        shapes = {}
    out = []
    for r in rows.itertuples():
        stats = refs = None
        if r.us_median == r.us_median and r.us_median is not None:
            stats = Stats(r.us_median, _num(r.us_p10, r.us_median), _num(r.us_p90, r.us_median), r.us_median,
                          0.0, int(_num(r.n_reps, 1)))
            refs = {}
            for name in SPEEDUP_NAMES:
                x = getattr(r, f"speedup_vs_{name}")
                if x == x and x is not None:
                    us = r.us_median * x
                    refs[name] = Stats(us, us, us, us, 0.0, 1)
        scenario = shapes.get(r.scenario) or _placeholder(problem, r.scenario, r.category or "user",
                                                                      shapes)
        out.append(ScenarioResult(scenario=scenario, status=r.status, reason=_text(r.reason), detail=_text(r.detail),
                                  rel_l2_err=_opt(r.rel_l2_err), max_abs_err=_opt(r.max_abs_err), stats=stats,
                                  reference_stats=refs or {}, flags=[f for f in _text(r.flags).split(",") if f]))
    return SuiteResult(status="evaluated" if out else "error", rows=out, **common)
