"""One scenario of `workbench warm`: the baseline's comparison rows and timing and the anchors' timings, into the
cache, with no candidate. The rows are checked against the fp32 reference on the same seed (what the baseline's
role needs: the rows candidates are compared with must be right); nothing else of the baseline is verified.
"""
from __future__ import annotations

from workbench.harness.result import FAILED, PASSED, ScenarioResult
from workbench.harness.scenarios import Scenario
from workbench.harness.verify import Verifier


def warm_scenario(run, s: Scenario, baseline) -> ScenarioResult:
    """run: the worker's ScenarioRun (its cache, anchors, baseline role and timer)."""
    tol = run.problem.tolerances
    run.spent, run.rows_s, run.baseline.spent_s, run.baseline.rows_s = {}, {}, 0.0, 0.0
    verifier = Verifier(s, run.device, tol, run.fresh_seed, run.judge)
    result = ScenarioResult(scenario=s.to_dict(), status=PASSED)
    rows = run.original_rows(s, verifier, baseline)
    if rows is not None:
        ref = verifier.reference_for(tol.seeds[0])      # on rows_for(seed); the baseline's are its first rows
        expected = ref.head(len(rows.rows)).primary.to(rows.primary.device)
        norm = float(expected.norm())
        diff = float((rows.primary - expected).norm())
        result.rel_l2_err = diff / norm if norm > 0 else diff
        if not result.rel_l2_err <= tol.rel_l2_tol:
            result.status, result.reason = FAILED, "mismatch"
            result.detail = (f"the baseline's output on seed {tol.seeds[0]} has rel L2 {result.rel_l2_err:.2e} "
                             f"against the fp32 reference (tol {tol.rel_l2_tol:.0e})")
            return result
    seeds, refs, sets = run.timing_inputs(s, verifier)
    del verifier
    if run.add_baseline(result, s, baseline, sets):
        run.time_anchors(result, s, sets, refs)
    return result
