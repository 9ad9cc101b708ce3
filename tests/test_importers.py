"""Importers on hand-made transcripts; every expected number is worked out in tests/fixtures/transcripts/README.md."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from workbench.traces.importers import import_main, import_paths, sniff
from workbench.traces.importers.harness_output import evaluation_rows, find_sightings
from workbench.traces.writer import TraceWriter, read_table

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude_code"
CODEX = FIXTURES / "codex"
ROLLOUT = CODEX / "2026" / "01" / "11" / "rollout-2026-01-11T09-00-00-cx-1.jsonl"


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    root = tmp_path_factory.mktemp("traces")
    sessions = import_paths([CLAUDE, CODEX], root)
    return root, {s.session_id: s for s in sessions}


def _by(df, key):
    return {row[key]: row for row in df.to_dict("records")}


# ---- Claude Code ------------------------------------------------------------------------------------
def test_claude_code_resumed_session_is_one_session(traces):
    root, sessions = traces
    assert sorted(sessions) == ["cc-1", "cx-1"]
    tally = sessions["cc-1"].tally
    assert [Path(f).name for f in tally.files] == ["cc-1.jsonl", "cc-2.jsonl"]
    assert tally.lines == 51
    assert tally.duplicate_lines == 12         # cc-2:1-12 copy u01..u12
    assert tally.ignored_lines == 1            # the summary line
    assert tally.usage_duplicates == 3         # 19 usage lines, 16 (message.id, requestId) keys
    assert tally.orphan_results == 0
    assert [(Path(f).name, n) for f, n, _ in tally.malformed] == [("cc-1.jsonl", 19)]
    s = read_table(root, "sessions", "cc-1").iloc[0]
    assert s["source"] == "claude_code" and s["model"] == "claude-sonnet-4-5-20250929"
    assert str(s["started_at"]) == "2026-01-10 10:00:00+00:00" and str(s["ended_at"]) == "2026-01-10 10:13:31+00:00"
    assert json.loads(s["config_json"])["import"]["malformed_lines"] == 1


def test_claude_code_messages(traces):
    root, _ = traces
    m = read_table(root, "messages", "cc-1")
    assert len(m) == 37
    assert m["message_id"].is_unique
    assert int(m["is_sidechain"].sum()) == 4
    assert sorted(m.loc[m["is_human"], "message_id"]) == ["u01", "u11", "u19", "u27"]
    rows = _by(m, "message_id")
    assert not rows["u13"]["is_human"]         # sub-agent prompt
    assert not rows["u18"]["is_human"]         # isMeta caveat
    # the resumed copy is dropped: rows point at the original file and line
    assert (Path(rows["u11"]["source_file"]).name, rows["u11"]["source_line"]) == ("cc-1.jsonl", 12)
    assert (Path(rows["u19"]["source_file"]).name, rows["u19"]["source_line"]) == ("cc-2.jsonl", 13)
    assert rows["u03"]["block_type"] == "tool_use" and rows["u04"]["block_type"] == "tool_result"
    assert rows["u03"]["parent_id"] == "u02"


def test_claude_code_usage_deduplicated(traces):
    root, _ = traces
    m = read_table(root, "messages", "cc-1")
    rows = _by(m, "message_id")
    # usage on the first line of each API message, with the largest output count of its partials
    assert rows["u02"]["output_tokens"] == 30 and rows["u02"]["input_tokens"] == 100
    assert rows["u02"]["cache_read_tokens"] == 1000 and rows["u02"]["cache_write_tokens"] == 200
    assert m.loc[m["message_id"] == "u03", "output_tokens"].isna().all()
    assert rows["u05"]["output_tokens"] == 60 and rows["u20"]["output_tokens"] == 90
    assert rows["u36"]["output_tokens"] == 12 and rows["u37"]["output_tokens"] == 14   # two request ids
    assert int(m["input_tokens"].sum()) == 532
    assert int(m["output_tokens"].sum()) == 704
    assert int(m["cache_read_tokens"].sum()) == 23460
    assert int(m["cache_write_tokens"].sum()) == 800
    assert m["cost_usd"].sum() == pytest.approx(0.020520, abs=1e-12)
    assert rows["u14"]["cost_usd"] == pytest.approx((10 * 1 + 8 * 5 + 500 * 1.25) / 1e6)    # haiku prices


def test_claude_code_tool_calls(traces):
    root, _ = traces
    c = read_table(root, "tool_calls", "cc-1")
    assert list(c.sort_values("tool_index")["call_id"]) == ["tu1", "tu2", "tu3", "tu4", "tu5", "tu6", "tu12", "tu7",
                                                            "tu8", "tu9", "tu10", "tu11"]
    calls = _by(c, "call_id")
    assert int(c["is_error"].sum()) == 1 and calls["tu12"]["is_error"]
    assert calls["tu12"]["error"] == "<tool_use_error>String to replace not found in file."
    assert calls["tu1"]["duration_s"] == 29.0 and calls["tu1"]["tool_name"] == "Bash"
    assert calls["tu4"]["output_text"] == "DRAM throughput is 45% of peak, so the kernel is not memory bound."
    assert json.loads(calls["tu2"]["input_json"])["new_string"] == "#define BLOCK_M 128\n#define BLOCK_N 64"
    assert (Path(calls["tu7"]["source_file"]).name, calls["tu7"]["source_line"]) == ("cc-2.jsonl", 19)


def test_claude_code_harness_results_become_evaluations(traces):
    root, _ = traces
    e = read_table(root, "evaluations", "cc-1")
    assert len(e) == 7
    assert sorted(e["eval_id"].unique()) == ["ev-cc-1", "ev-cc-3", "ev-cc-4", "tu3#0"]
    first = e[e["eval_id"] == "ev-cc-1"].sort_values("scenario")
    assert list(first["scenario"]) == ["b2_h16_s1024_d128", "b2_h16_s1024_d128_causal"]
    assert list(first["speedup_vs_fa3"]) == [pytest.approx(0.5), pytest.approx(0.5)]
    assert list(first["speedup_vs_original"]) == [pytest.approx(1.0), pytest.approx(1.0)]
    # 4*B*Hq*S*S*D / 100 us; causal with Sq == Sk is half
    assert list(first["tflops"]) == [pytest.approx(171.79869184), pytest.approx(85.89934592)]
    assert set(first["geomean_vs_fa3"]) == {0.5} and set(first["gpu"]) == {"NVIDIA H200"}
    assert json.loads(first["versions_json"].iloc[0]) == {"cuda": "13.0", "torch": "2.13.0"}
    assert list(first["call_id"]) == ["tu1", "tu1"] and set(first["source_line"]) == {5}
    line_style = e[e["eval_id"] == "tu3#0"].iloc[0]
    assert pd.isna(line_style["scenario"]) and line_style["kernel_sha"] == "sha1" and line_style["suite"] == "dev26"
    assert line_style["geomean_vs_fa3"] == 0.55 and line_style["geomean_vs_original"] == 1.10
    assert line_style["status"] == "passed" and line_style["all_correct"]
    pretty = e[e["eval_id"] == "ev-cc-3"]           # pretty-printed JSON among log lines
    assert len(pretty) == 2 and set(pretty["geomean_vs_fa3"]) == {0.6}


# ---- Codex ------------------------------------------------------------------------------------------
def test_codex_counts(traces):
    root, sessions = traces
    tally = sessions["cx-1"].tally
    assert tally.lines == 30 and tally.duplicate_lines == 0 and tally.ignored_lines == 3
    assert [n for _, n, _ in tally.malformed] == [18]
    m = read_table(root, "messages", "cx-1")
    assert len(m) == 19
    assert list(m.loc[m["is_human"], "source_line"]) == [4]
    env = m[m["source_line"] == 2].iloc[0]
    assert env["role"] == "user" and not env["is_human"]
    assert list(m.loc[m["block_type"] == "thinking", "text"]) == ["**Planning a baseline run**"]
    s = read_table(root, "sessions", "cx-1").iloc[0]
    assert s["source"] == "codex" and s["model"] == "gpt-5-codex"


def test_codex_cumulative_tokens_are_differenced(traces):
    root, _ = traces
    m = read_table(root, "messages", "cx-1")
    usage = m.dropna(subset=["output_tokens"]).sort_values("source_line")
    assert list(usage["source_line"]) == [6, 11, 15, 19, 25]
    assert list(usage["input_tokens"]) == [500, 500, 1000, 1000, 1000]
    assert list(usage["cache_read_tokens"]) == [1500, 2500, 2000, 3000, 2000]
    assert list(usage["output_tokens"]) == [100, 300, 200, 300, 100]
    assert m["cost_usd"].sum() == pytest.approx(0.016375, abs=1e-12)


def test_codex_tool_calls_and_evaluations(traces):
    root, _ = traces
    c = read_table(root, "tool_calls", "cx-1").sort_values("tool_index")
    assert list(c["call_id"]) == [f"call_{i}" for i in range(1, 8)]
    assert list(c["tool_name"]) == ["shell", "apply_patch", "shell", "shell", "shell", "apply_patch", "shell"]
    calls = _by(c, "call_id")
    assert list(c["is_error"]) == [False, False, False, False, True, False, False]
    assert calls["call_1"]["duration_s"] == 34.0
    assert calls["call_2"]["output_text"].startswith("Success. Updated the following files:")
    e = read_table(root, "evaluations", "cx-1")
    assert len(e) == 6
    assert e.groupby("eval_id").size().to_dict() == {"call_1#0": 2, "call_3#0": 1, "call_5#0": 1, "call_7#0": 2}
    failed = e[e["eval_id"] == "call_5#0"].iloc[0]
    assert failed["status"] == "failed" and failed["reason"] == "build_failed"
    assert failed["detail"] == "ptxas fatal : Unresolved extern function 'cp_async_wait'"
    assert failed["all_correct"] is False or failed["all_correct"] == False  # noqa: E712


def test_codex_resumed_rollout_and_counter_restart(tmp_path):
    """A second file of the same session repeats 17 lines, then adds a call; its token counter restarts."""
    lines = ROLLOUT.read_text().splitlines()
    (tmp_path / "a").mkdir()
    shutil.copy(ROLLOUT, tmp_path / "a" / ROLLOUT.name)
    extra = [
        {"timestamp": "2026-01-11T10:00:00.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "call_id": "call_8",
                     "arguments": json.dumps({"command": ["bash", "-lc", "workbench check kernel.cu"]})}},
        {"timestamp": "2026-01-11T10:00:30.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_8", "output": "geomean_vs_fa3: 0.9\n"}},
        {"timestamp": "2026-01-11T10:00:31.000Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": {"total_token_usage": {
             "input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 50}}}},
    ]
    (tmp_path / "a" / "rollout-resumed.jsonl").write_text("\n".join(lines[:17] + [json.dumps(x) for x in extra]) + "\n")
    sessions = import_paths([tmp_path / "a"], tmp_path / "out")
    assert len(sessions) == 1
    s = sessions[0]
    assert s.tally.duplicate_lines == 17
    assert len(s.tables["messages"]) == 21 and len(s.tables["tool_calls"]) == 8
    call8 = next(r for r in s.tables["messages"] if r["source_line"] == 18 and "resumed" in r["source_file"])
    assert (call8["input_tokens"], call8["output_tokens"]) == (500, 50)       # restart: the total is the difference
    assert sum(r.get("output_tokens") or 0 for r in s.tables["messages"]) == 1050


# ---- harness output parsing, our campaigns, CLI, robustness -----------------------------------------------
def test_harness_line_parsing():
    def figures(text):
        return [(s.form, s.geomeans, s.rows[0]["all_correct"], s.rows[0]["stop_met"]) for s in find_sightings(text)]

    assert figures("geomean_vs_fa3: 0.73") == [("text", {"fa3": 0.73}, None, None)]
    runs = figures("geomean_vs_fa3: 0.5\nall_correct: false\ngeomean_vs_fa3=0.6\nstop_met: true\n")
    assert runs == [("text", {"fa3": 0.5}, False, None), ("text", {"fa3": 0.6}, None, True)]
    assert find_sightings("speedup: 2.0\nthe geomean_vs_fa3 is about 1") == []
    rows = evaluation_rows('noise {"kernel_sha": 1}\n{"not": "a result"}\n', session_id="s", call_id="c", ts=None,
                           source_file="f", source_line=1)
    assert rows == []


def T(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def _campaign(root: Path) -> None:
    """A campaign as the recorder writes it: tables under campaigns/c1/traces, one harness run only in tool output."""
    suite = ({"kernel_sha": "k1", "suite": "smoke", "status": "evaluated", "rows": [],
                                   "geomeans": {"overall": {"fa3": 0.8, "original": 1.6}}, "all_correct": True,
                                   "eval_id": "ev-k1"})
    w = TraceWriter(root, "camp-1")
    w.append("sessions", [{"campaign_id": "c1", "arm": "bank", "agent": "offline"}])
    w.append("messages", [
        {"message_id": "m1", "block_index": 0, "role": "user", "block_type": "text", "is_human": True,
         "text": "Optimize the kernel.", "ts": T("2026-02-01T00:00:00")},
        {"message_id": "m2", "block_index": 0, "role": "assistant", "block_type": "text", "is_human": False,
         "text": "Tuning the shared memory tile.", "ts": T("2026-02-01T00:00:10")},
        {"message_id": "m3", "block_index": 0, "role": "user", "block_type": "text", "is_human": False,
         "text": "Is the pipeline depth the limit?", "ts": T("2026-02-01T00:01:00")}])
    w.append("tool_calls", [
        {"call_id": "t1", "tool_index": 1, "tool_name": "run_harness", "output_text": json.dumps(suite),
         "started_at": T("2026-02-01T00:00:20"), "ended_at": T("2026-02-01T00:00:50"), "is_error": False},
        {"call_id": "t2", "tool_index": 2, "tool_name": "edit_file", "is_error": False,
         "input_json": json.dumps({"path": "kernel.cu", "old_string": "#define STAGES 2",
                                   "new_string": "#define STAGES 3"}),
         "started_at": T("2026-02-01T00:01:10"), "ended_at": T("2026-02-01T00:01:11")}])
    w.append("interventions", [{"intervention_id": "i1", "trigger": "stall", "source": "bank", "question_id": "q07",
                                "question_text": "Is the pipeline depth the limit?", "layer": "pipelining",
                                "ts": T("2026-02-01T00:01:00"), "tool_index": 1}])


def test_workbench_campaign_import(tmp_path):
    campaign = tmp_path / "campaigns" / "c1"
    _campaign(campaign / "traces")
    out = tmp_path / "traces"
    sessions = import_paths([tmp_path / "campaigns"], out)
    assert [s.session_id for s in sessions] == ["camp-1"]
    s = read_table(out, "sessions").iloc[0]
    assert s["source"] == "workbench" and s["arm"] == "bank" and s["source_file"] == str(campaign / "traces")
    m = read_table(out, "messages")
    assert len(m) == 3 and m["source_file"].str.endswith("messages/camp-1/part-00000.parquet").all()
    assert list(m["source_line"]) == [1, 2, 3]
    e = read_table(out, "evaluations")       # recovered from the run_harness output
    assert list(e["eval_id"]) == ["ev-k1"] and e.iloc[0]["geomean_vs_fa3"] == 0.8
    assert len(read_table(out, "interventions")) == 1
    # importing again replaces, never duplicates
    import_paths([tmp_path / "campaigns"], out)
    assert len(read_table(out, "messages")) == 3 and len(read_table(out, "sessions")) == 1


def test_reimport_is_idempotent(tmp_path):
    for _ in range(2):
        import_paths([CLAUDE], tmp_path)
    assert len(read_table(tmp_path, "messages")) == 37
    assert len(read_table(tmp_path, "tool_calls")) == 12


def test_sniff():
    assert sniff(ROLLOUT) == "codex"
    assert sniff(CLAUDE / "-work-attn" / "cc-1.jsonl") == "claude_code"


def test_garbage_never_crashes(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"user","uuid":"x1","sessionId":"g","message":"not a dict"}\n'
                   "[1, 2, 3]\n\x00\x01 binary\n"
                   '{"type":"assistant","uuid":"x2","sessionId":"g","message":{"content":[{"type":"tool_result",'
                   '"tool_use_id":"nope","content":"geomean_vs_fa3: oops"}]}}\n'
                   '{"type":"user","uuid":"x3","sessionId":"g","timestamp":"not a time","message":{"content":7}}\n')
    sessions = import_paths([bad], tmp_path / "out", fmt="claude_code")
    t = sessions[0].tally
    assert len(t.malformed) == 4    # message not an object, JSON array, binary junk, content neither text nor list
    assert t.orphan_results == 1
    assert len(sessions[0].tables["messages"]) == 1


def test_secrets_never_reach_disk(tmp_path):
    key = "sk-ant-api03-" + "A" * 40
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"type": "user", "uuid": "k1", "sessionId": "sec", "timestamp": "2026-01-01T00:00:00Z",
                             "message": {"role": "user", "content": f"my key is {key}"}}) + "\n")
    import_paths([f], tmp_path / "out")
    blobs = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*.parquet"))
    assert key.encode() not in blobs
    assert read_table(tmp_path / "out", "messages").iloc[0]["text"] == "my key is [REDACTED]"


def test_cli(tmp_path, capsys):
    assert import_main([str(CLAUDE), "-o", str(tmp_path), "--arm", "human"]) == 0
    out, err = capsys.readouterr()
    assert "cc-1: 37 message rows, 12 tool calls, 7 evaluation rows from 2 file(s); 1 malformed" in out
    assert "cc-1.jsonl:19" in err
    assert read_table(tmp_path, "sessions").iloc[0]["arm"] == "human"
    assert import_main([str(tmp_path / "missing"), "-o", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert "no such file or directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert import_main([str(empty), "-o", str(tmp_path)]) == 2


def test_cli_dispatch(tmp_path):
    from workbench.cli import main
    assert main(["import", str(CODEX), "-o", str(tmp_path)]) == 0
    assert len(read_table(tmp_path, "tool_calls")) == 7
