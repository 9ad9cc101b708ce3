"""near_ceiling fires when the candidate is near the ceiling and faster than every anchor measured on the shape
(workbench/harness/flags.py); replayed on the rows of the campaign h200-fa3-race's first evaluation (H200,
2026-12-01), where the ceiling alone flagged 22 rows and FA3 was faster on 21 of them."""
from pathlib import Path

import pytest

from workbench.harness import flags
from workbench.harness.check import apply_flags
from workbench.harness.problem import Problem
from workbench.harness.result import ScenarioResult, Stats, SuiteResult
from workbench.harness.scenarios import load_suite

ROOT = Path(__file__).resolve().parents[1]
EVALUATION = ROOT / "data/campaigns/h200-fa3-race/traces/evaluations/h200-fa3-race/part-00000.parquet"
SHAPES = {s.name: s for s in load_suite("full")}
CEILING = 790.0


def timed(us: float) -> Stats:
    return Stats(us, us, us, us, 0.0, 5)


def row_at(tflops: float, **anchors_tflops) -> ScenarioResult:
    """A row of A_d128_c0_s16k whose candidate runs at `tflops`, each anchor at its own TFLOP/s."""
    s = SHAPES["A_d128_c0_s16k"]
    us = lambda t: s.flops() / (t * 1e12) * 1e6
    return ScenarioResult(scenario=s.to_dict(), status="passed", stats=timed(us(tflops)),
                          reference_stats={name: timed(us(t)) for name, t in anchors_tflops.items()})


def flagged(*rows, **problem_flags) -> list[bool]:
    problem = Problem.load()
    problem.flags.update(problem_flags)
    result = SuiteResult(kernel_path="k", kernel_sha="x", suite="full", status="evaluated", rows=list(rows))
    apply_flags(result, problem, None)
    return ["near_ceiling" in r.flags for r in rows]


def test_near_the_ceiling_flags_only_a_candidate_faster_than_every_anchor():
    assert flagged(row_at(760.0, fa3=820.0, cudnn=700.0)) == [False]      # FA3 got there first: honest
    assert flagged(row_at(760.0, fa3=740.0, cudnn=700.0)) == [True]       # ahead of every library
    assert flagged(row_at(760.0, original=10.0)) == [True]               # the original is no anchor: the
    assert flagged(row_at(760.0)) == [True]                              # ceiling alone, as before
    assert flagged(row_at(600.0, fa3=500.0)) == [False]                  # not near the ceiling at all


def above(*rows) -> list[bool]:
    flagged(*rows)
    return ["above_ceiling" in r.flags for r in rows]


def test_above_the_ceiling_flags_only_a_candidate_faster_than_every_anchor():
    assert above(row_at(800.0, fa3=820.0)) == [False]        # FA3 above the GEMM figure too (the d256 rows, q004)
    assert above(row_at(830.0, fa3=820.0)) == [True]         # ahead of FA3 and above the ceiling
    assert above(row_at(830.0), row_at(830.0, original=5.0)) == [True, True]     # nothing to compare with
    assert above(row_at(780.0, fa3=700.0)) == [False]        # under it: near_ceiling's business


def test_v17s_evaluation_keeps_only_the_above_ceiling_rows_ahead_of_fa3():
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(EVALUATION).to_pandas()
    table = table[table["eval_id"] == "96aa79e88a96"]                 # v17 (session 12): above_ceiling:5
    assert len(table) == 182 and "above_ceiling:5" in table["suite_flags"].iloc[0]
    rows = [ScenarioResult(scenario=SHAPES[r.scenario].to_dict(), status="passed", stats=timed(r.us_median),
                           reference_stats={"fa3": timed(r.us_median * r.speedup_vs_fa3)})
            for r in table.itertuples()]
    hits = [(r.name, x) for r, x, hit in zip(rows, table["speedup_vs_fa3"], above(*rows)) if hit]
    assert hits == [("B_h16x8_d256_c1_s32k", pytest.approx(1.0021, abs=1e-4))], hits   # 807 TFLOP/s, 0.2 % ahead


def test_a_margin_over_the_best_anchor_can_be_asked_for():
    close, far = row_at(760.0, fa3=740.0), row_at(760.0, fa3=700.0)     # 2.7 % and 8.6 % faster than FA3
    assert flagged(close, far, near_ceiling_over_best_anchor=0.05) == [False, True]
    three = row_at(1.0, fa3=2.0, fa2=1.0, original=100.0)                 # the original is fastest, but no anchor
    assert flags.best_anchor_us(three) == three.reference_stats["fa3"].median_us


def test_the_campaigns_first_evaluation_flags_1_row_where_it_flagged_22():
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(EVALUATION).to_pandas()
    table = table[table["eval_id"] == table["eval_id"].iloc[0]]      # the first evaluation; later ones follow it
    assert len(table) == 182 and table["suite_flags"].iloc[0].startswith("near_ceiling:22")
    rows = [ScenarioResult(scenario=SHAPES[r.scenario].to_dict(), status="passed", stats=timed(r.us_median),
                           reference_stats={"fa3": timed(r.us_median * r.speedup_vs_fa3),
                                            "original": timed(r.us_median * r.speedup_vs_original)})
            for r in table.itertuples()]
    old = [r for r in rows if 0.9 * CEILING < (r.tflops or 0.0) <= CEILING]
    assert len(old) == 22 and sum(r.speedup("fa3") < 1.0 for r in old) == 21
    now = [r.name for r, hit in zip(rows, flagged(*rows)) if hit]
    assert now == ["D_prefill_q512_k16k_h16x8_d256"]                     # 716 TFLOP/s, 1.64x FA3
