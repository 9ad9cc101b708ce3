"""Harness runs in tool output (importers/harness_output.py, run_identity.py), on verbatim `workbench check` stdout
from tests/fixtures/transcripts/realistic/harness_stdout (README there: the command of each capture)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from workbench.harness.result_line import RESULT_PREFIX
from workbench.traces.importers.codex import _output
from workbench.traces.importers.harness_output import evaluation_rows, find_sightings
from workbench.traces.importers.run_identity import SAME_RUN_WINDOW_S, RunMerger

CAPTURES = Path(__file__).parent / "fixtures" / "transcripts" / "realistic" / "harness_stdout"
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)


def capture(name: str, old_harness: bool = False) -> str:
    text = (CAPTURES / name).read_text()
    if old_harness:     # the stdout of workbench check before it printed the result line
        text = "".join(l for l in text.splitlines(keepends=True) if not l.startswith(RESULT_PREFIX))
    return text


def rows_of(*outputs, gap_s: float = 5.0) -> list[dict]:
    """Evaluation rows of tool outputs seen one after the other, gap_s apart, as one session."""
    merger = RunMerger()
    for k, text in enumerate(outputs):
        merger.add(find_sightings(text), call_id=f"c{k + 1}", ts=T0 + timedelta(seconds=gap_s * k),
                   source_file="t.jsonl", source_line=k + 1)
    return merger.rows("s")


def runs(rows) -> dict:
    out = {}
    for r in rows:
        out.setdefault(r["eval_id"], []).append(r)
    return out


@pytest.mark.parametrize("name, old, eval_id, original, fa3", [
    ("cpu_correct_2.txt", False, "c395b20d6622", 3.971473, None),           # with the result line
    ("cpu_correct_2.txt", True, "c1#0", 3.971, None),                       # the same stdout, older harness
    ("cpu_correct_old_harness.txt", False, "c1#0", 3.875, None),            # printed by the older harness itself
    ("h200_02_mma_dev26.txt", False, "c1#0", 32.065, 0.732),                # H200, x FA3 first, trailing text
])
def test_the_stdout_of_a_stand_in_run_is_exactly_one_run(name, old, eval_id, original, fa3):
    [row] = rows_of(capture(name, old))
    assert row["eval_id"] == eval_id and row["scenario"] is None
    assert row["geomean_vs_original"] == pytest.approx(original) and row["geomean_vs_fa3"] == fa3
    assert (row["status"], row["all_correct"], row["stop_met"]) == ("passed", True, True)
    assert row["suite"] in ("smoke", "dev26") and row["gpu"] in ("cpu", "NVIDIA H200")


@pytest.mark.parametrize("old", [False, True])
def test_a_failed_build_is_a_row(old):
    [row] = rows_of(capture("cpu_kernel_build_failed.txt", old))
    assert (row["status"], row["reason"], row["all_correct"]) == ("failed", "build_failed", False if not old else None)
    assert 'identifier "CHUNK_ELEMS" is undefined' in row["detail"]
    assert row["kernel_sha"].startswith("f5c4f1250102") and row["geomean_vs_original"] is None


@pytest.mark.parametrize("old", [False, True])
def test_a_failed_verification_is_a_row(old):
    [row] = rows_of(capture("cpu_no_causal_mask.txt", old))
    assert (row["status"], row["reason"], row["all_correct"]) == ("failed", "mismatch", False)
    assert row["detail"].startswith("5 of 8 scenarios failed")
    assert row["geomean_vs_original"] == pytest.approx(0.26684, abs=5e-4)     # of the passing scenarios


def test_built_but_not_verified_is_static_only():
    for old in (False, True):
        [row] = rows_of(capture("cpu_kernel_static_only.txt", old))
        assert (row["status"], row["reason"], row["geomean_vs_original"]) == ("static_only", None, None)


def test_text_and_a_json_read_back_are_one_run():
    full = (CAPTURES / "cpu_correct_4.json").read_text()
    # with the result line: by eval id, at any distance in time
    for gap in (5.0, 86400.0):
        [(eval_id, rows)] = runs(rows_of(capture("cpu_correct_4.txt"), full, gap_s=gap)).items()
        assert eval_id == "0a94de92b614" and len(rows) == 8         # the JSON's per-scenario rows
        assert {r["call_id"] for r in rows} == {"c1"} and {r["source_line"] for r in rows} == {2}
    # an older harness: no eval id in the text; sha prefix, suite, status and geomean within the window
    old = capture("cpu_correct_old_harness.txt")
    pretty = (CAPTURES / "cpu_correct_old_harness.json.tool.txt").read_text()
    [(eval_id, rows)] = runs(rows_of(old, pretty)).items()
    assert eval_id == "607e9ee29bb2" and len(rows) == 8
    assert rows[0]["ts"] == T0                                      # when the result first appeared
    # both in one output (`workbench check --json r.json && cat r.json`)
    assert len(runs(rows_of(capture("cpu_correct_4.txt") + full))) == 1
    # the read-back after the window, without an eval id on one side: not provably the same run
    assert len(runs(rows_of(old, pretty, gap_s=SAME_RUN_WINDOW_S + 1))) == 2


def test_a_quote_of_a_run_is_not_another_run():
    quote = "The stand-in passed:\ngeomean_vs_original: 0.719   (A 0.595, B 0.015)\nall_correct: true\n"
    rows = rows_of(capture("cpu_correct_subagent.txt"), quote)
    assert list(runs(rows)) == ["197de5cf7e7c"]
    merger = RunMerger()
    merger.add(find_sightings(capture("cpu_correct_subagent.txt")), call_id="c1", ts=T0, source_file="f",
               source_line=1)
    merger.add(find_sightings(quote), call_id="c2", ts=T0, source_file="f", source_line=2)
    assert (merger.sightings, merger.seen_again) == (2, 1)


def test_distinct_runs_stay_distinct():
    line = capture("cpu_correct_2.txt")
    other_id = line.replace("c395b20d6622", "d00000000001")
    assert len(runs(rows_of(line, other_id))) == 2                  # same figures, another eval id
    old = capture("cpu_correct_2.txt", True)
    assert len(runs(rows_of(old + old))) == 2                       # printed twice in one output: two runs
    assert len(runs(rows_of(old, old.replace("(sha standin:corr)", "(sha 1a2b3c4d5e6f)")))) == 2
    assert len(runs(rows_of(old, old.replace("geomean_vs_original: 3.971", "geomean_vs_original: 3.975")))) == 2


@pytest.mark.parametrize("line, value", [
    ("geomean_vs_fa3: 0.755   (A 0.748, B 0.762, C 0.801, D 0.712)", 0.755),
    ("geomean_vs_fa3: 0.755 (vs 0.74 last time)", 0.755),
    ("geomean_vs_fa3=0.755;", 0.755),
    ("  geomean_vs_fa3 : 0.755", 0.755),
])
def test_key_value_lines_tolerate_trailing_text(line, value):
    [s] = find_sightings(line)
    assert s.geomeans == {"fa3": value}


def test_what_is_not_a_harness_run():
    assert find_sightings("speedup: 2.0\nthe geomean_vs_fa3 is about 1\nkernel.cu: build failed at line 3") == []
    assert find_sightings("kernel: k.cu (sha 1a2b3c4d5e6f)\nsuite: smoke\n") == []     # no scenarios line
    assert find_sightings('{"kernel_sha": 1}\n{"not": "a result"}') == []
    full = (CAPTURES / "cpu_correct_4.json").read_text()
    assert find_sightings(f"     1→{full[:2000]}\n") == []         # Read cut the line: nothing to parse
    [s] = find_sightings("".join(f"{n:6d}→{l}\n" for n, l in enumerate(json.dumps(json.loads(full), indent=2)
                                                                          .splitlines(), start=1)))
    assert (s.form, s.eval_id, len(s.rows)) == ("json", "0a94de92b614", 8)   # Read of a pretty-printed file


def test_evaluation_rows_of_one_output():
    rows = evaluation_rows(capture("cpu_correct_3.txt"), session_id="s", call_id="c9", ts=T0, source_file="f",
                           source_line=7)
    assert [(r["eval_id"], r["call_id"], r["source_line"]) for r in rows] == [("653f65823634", "c9", 7)]


@pytest.mark.parametrize("output, text, is_error", [
    ("Exit code: 1\nWall time: 1.1 seconds\nOutput:\nboom\n", "boom\n", True),
    ("Exit code: 0\nWall time: 24.9 seconds\nTotal output lines: 384\nOutput:\nok\n", "ok\n", False),
    (json.dumps({"output": "ok", "metadata": {"exit_code": 2}}), "ok", True),
    ([{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}], "a\nb", False),
    ("plain", "plain", False),
])
def test_codex_output_shapes(output, text, is_error):
    assert _output({"output": output}) == (text, is_error)
