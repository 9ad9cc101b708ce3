"""`workbench check` ends its stdout with one `workbench-result: {json}` line, and the importers read a run from
that stdout exactly once (harness/result_line.py, traces/importers/harness_output.py)."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

from workbench.cli import main as workbench
from workbench.harness.result_line import RESULT_PREFIX, SCHEMA_VERSION, parse_result_lines
from workbench.traces.importers.harness_output import evaluation_rows, find_sightings


def _check(tmp_path, kernel: str, *extra) -> tuple[int, str, dict]:
    out_json, stdout = tmp_path / "r.json", io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = workbench(["check", kernel, "--suite", "smoke", "--anchors", "", "--traces", "", "--json",
                          str(out_json), *extra])
    return code, stdout.getvalue(), json.loads(out_json.read_text())


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    return _check(tmp_path_factory.mktemp("check"), "standin:correct")


def test_the_result_line_is_last_and_says_what_the_json_says(correct):
    code, out, full = correct
    assert code == 0
    last = out.rstrip("\n").splitlines()[-1]
    assert last.startswith(RESULT_PREFIX + " {")
    [line] = parse_result_lines(out)
    assert line["schema"] == SCHEMA_VERSION
    for key in ("eval_id", "kernel_sha", "kernel_path", "suite", "status", "all_correct", "stop_met", "gpu"):
        assert line[key] == full[key], key
    assert line["geomeans"]["overall"]["original"] == pytest.approx(full["geomeans"]["overall"]["original"], rel=1e-5)
    assert set(line["geomeans"]) == set(full["geomeans"])       # overall and every category
    assert line["counts"]["passed"] == 8 and line["failures"] == []
    json.loads(last[len(RESULT_PREFIX):])                        # strict JSON: no NaN anywhere


def test_a_failed_verification_names_its_failures(tmp_path):
    code, out, full = _check(tmp_path, "standin:wrong_scale", "--no-timing")
    assert code == 1
    [line] = parse_result_lines(out)
    assert line["status"] == "evaluated" and line["all_correct"] is False
    failed = [r["scenario"]["name"] for r in full["rows"] if r["status"] == "failed"]
    assert [f["scenario"] for f in line["failures"]] == failed and {f["reason"] for f in line["failures"]} == {
        "mismatch"}
    assert line["geomeans"]["overall"] == {}                     # verify only: nothing timed, no NaN printed


def test_stdout_of_a_run_is_one_run_and_its_json_read_back_the_same(correct):
    _, out, full = correct
    [seen] = find_sightings(out)                 # the summary lines and the result line: one run
    assert seen.form == "result_line" and seen.eval_id == full["eval_id"]
    both = out + "\n$ cat r.json\n" + json.dumps(full) + "\n"
    rows = evaluation_rows(both, session_id="s", call_id="c1", ts=None, source_file="f", source_line=1)
    assert {r["eval_id"] for r in rows} == {full["eval_id"]}
    assert len(rows) == 8                                        # the JSON's per-scenario rows win
    older = "\n".join(l for l in out.splitlines() if not l.startswith(RESULT_PREFIX))   # a harness without it
    rows = evaluation_rows(older + "\n" + json.dumps(full), session_id="s", call_id="c1", ts=None, source_file="f",
                           source_line=1)
    assert {r["eval_id"] for r in rows} == {full["eval_id"]} and len(rows) == 8
