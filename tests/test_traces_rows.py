"""traces/rows.py is the one SuiteResult <-> `evaluations` mapping: `workbench check --traces`, the campaign
recorder and the transcript importer write the same columns for the same run, and a replay reads them back."""
from __future__ import annotations

import pandas as pd

from workbench.campaign.events import EvaluationDone, TurnCommitted
from workbench.campaign.recorder import TraceRecorder
from workbench.check_cli import write_traces
from workbench.evaluators.standin_timings import standin_result
from workbench.harness.result import CheckRequest, SuiteResult
from workbench.traces.importers.harness_output import find_sightings
from workbench.traces.rows import result_from_rows, rows_from_result
from workbench.traces.writer import read_table

# who ran it and when: the only columns in which two writers of one run may differ
WHO = {"session_id", "eval_id", "call_id", "turn", "ts", "source_file", "source_line"}


def _run(**kw) -> SuiteResult:
    request = CheckRequest(kernel_path="standin:correct", suite="smoke", stop_expr="all_correct")
    return standin_result(request, 1.25, flags=kw.get("flags", ("jump",)), row_flags=kw.get("row_flags", ("noisy",)))


def _recorded(tmp_path, result: SuiteResult) -> pd.DataFrame:
    recorder = TraceRecorder(tmp_path / "campaign", "c-1", {})
    recorder(EvaluationDone(turn=1, call_id="call-1", tool_index=0, eval_id="e-1", kernel_sha=result.kernel_sha,
                            result=result, geomean_vs_original=1.25, geomean_vs_fa3=0.15, best_vs_original=1.25,
                            best_vs_fa3=0.15, is_new_best=True))
    recorder(TurnCommitted(turn=1, tool_index=0, tokens=0, cost_usd=0.0))
    return read_table(tmp_path / "campaign", "evaluations")


def _shared(frame: pd.DataFrame) -> list[dict]:
    columns = sorted(set(frame.columns) - WHO)
    return frame[columns].astype(object).where(frame[columns].notna(), None).to_dict("records")


def test_check_and_the_campaign_recorder_write_the_same_rows(tmp_path):
    result = _run()
    write_traces(result, str(tmp_path / "check"))
    checked = read_table(tmp_path / "check", "evaluations")
    recorded = _recorded(tmp_path, result)
    assert len(checked) == len(recorded) == len(result.rows)
    assert _shared(checked) == _shared(recorded)
    row = checked.iloc[0]
    assert row["flags"] == "noisy" and row["suite_flags"] == "jump"       # the scenario's, then the run's
    assert abs(row["geomean_vs_original"] - 1.25) < 1e-9


def test_the_importer_reads_a_printed_result_into_the_same_rows():
    result = _run()
    [sighting] = find_sightings(result.to_json())
    imported = pd.DataFrame(sighting.rows)
    written = pd.DataFrame(rows_from_result(result))
    columns = sorted((set(imported.columns) & set(written.columns)) - WHO - {"is_standin"})
    assert "speedup_vs_fa3" in columns and "flags" in columns and "tflops" in columns
    assert _shared(imported[columns]) == _shared(written[columns])


def test_rows_read_back_into_the_same_run():
    result = _run()
    back = result_from_rows(pd.DataFrame(rows_from_result(result)), CheckRequest(kernel_path="k.cu", suite="smoke"))
    assert back.status == "evaluated" and back.flags == ["jump"] and back.gpu == result.gpu
    assert [r.name for r in back.rows] == [r.name for r in result.rows]
    for name in ("original", "fa3"):
        assert abs(back.geomean_vs(name) - result.geomean_vs(name)) < 1e-9


def test_a_run_that_judged_nothing_is_one_row_and_reads_back_as_such():
    failed = SuiteResult(kernel_path="k.cu", kernel_sha="ab" * 32, suite="smoke", status="build_failed",
                         error="nvcc: error: expected ';'")
    [row] = rows_from_result(failed, session_id="s")
    assert (row["scenario"], row["status"], row["reason"]) == (None, "failed", "build_failed")
    back = result_from_rows(pd.DataFrame([row]), CheckRequest(kernel_path="k.cu", suite="smoke"))
    assert (back.status, back.error, back.rows) == ("build_failed", "nvcc: error: expected ';'", [])
    # rows written before this mapping carried the run's status in `status`: read the same way
    old = dict(row, status="build_failed")
    assert result_from_rows(pd.DataFrame([old]),
                            CheckRequest(kernel_path="k.cu", suite="smoke")).status == "build_failed"
