"""Statistics on the hand-made transcripts; the expected numbers are derived in tests/fixtures/transcripts/README.md."""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import pandas as pd
import pytest

from workbench.traces import analysis as an
from workbench.traces.writer import TraceWriter


@pytest.fixture(scope="module")
def root(imported_fixture_traces):
    return imported_fixture_traces


@pytest.fixture(scope="module")
def a(root):
    return an.analyze(root)


# ---- the text rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("Are you winning on kernel cycles or only on wall time? Check with the L2 flush on.", "question"),
    ("why is the causal case slower", "question"),                  # no "?" but an interrogative opener
    ("What if the tile were 128 wide", "question"),
    ("Is the pipeline depth the limit?", "question"),
    ("Can you run the harness again?", "directive"),                # a request for an action
    ("Could you explain why the spill count went up?", "question"),  # explain is not an action verb
    ("Please check the register count. Is it above 128?", "question"),  # any question sentence wins
    ("Optimize kernel.cu on the dev26 suite. Run the harness after every change.", "directive"),
    ("Don't touch the causal path.", "directive"),
    ("You should profile first.", "directive"),
    ("FA3 reaches 740 TFLOP/s on this shape on the H200.", "information"),
    ("The causal shapes are half the FLOPs. Use TMA.", "directive"),  # directive beats information
    ("FYI the L2 is 60 MB", "information"),
    ("ok thanks", "other"),
    ("", "other"),
    (None, "other"),
    ("/cost", "other"),                                             # slash command
    ("```\nwhy?\n```\nok", "other"),                                # code is ignored
    ("> is this the limit?\nagreed", "other"),                      # quoted text is ignored
    ("- try 8 warps\n- keep the tile", "directive"),                # bullets are sentences
])
def test_classify_message(text, expected):
    assert an.classify_message(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Are you winning on kernel cycles or only on wall time? Check with the L2 flush on.", "measurement"),
    ("Are the 8 warps per block limiting occupancy, so that fewer blocks fit on each SM?", "parallelism"),
    ("I will switch the inner loop to cp.async double buffering to overlap loads with compute.", "pipelining"),
    ("The shared memory tiles are small; I will enlarge the shared memory tile.", "memory"),
    ("Are the HGMMA instructions issued back to back in the SASS?", "tensor-core/instructions"),
    ("Does the online softmax rescale too often?", "algorithm"),
    ("How much of the time is kernel launch overhead on the host?", "launch/host"),
    ("Is the bf16 rounding of P hurting accuracy?", "numerics"),
    ("FA3 reaches 740 TFLOP/s on this shape on the H200.", None),
    ("profile the memory", "measurement"),      # tie (1 each): the earlier layer in LAYERS wins
    (None, None),
])
def test_message_layer(text, expected):
    assert an.message_layer(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("0.55x of FA3 is the hardware limit for this kernel; it cannot be improved further.", True),
    ("Done: 0.70x of FA3 is the best we can achieve with this design.", True),
    ("The kernel is already optimal.", True),
    ("There is no further room on this shape.", True),
    ("DRAM throughput is 45% of peak, so the kernel is not memory bound.", False),
    ("Let me run the harness to get a starting point.", False),
    (None, False),
])
def test_claims_limit(text, expected):
    assert an.claims_limit(text) is expected


def test_edit_tracker():
    t = an.EditTracker()
    edit = lambda old, new: json.dumps({"file_path": "k.cu", "old_string": old, "new_string": new})  # noqa: E731
    assert t.feed("Edit", edit("a = 1;\nb = 2;\n}", "a = 3;\nb = 2;\n}")) == (1, 0, 1)   # context lines are not changes
    assert t.feed("Write", json.dumps({"file_path": "k.cu", "content": "a = 1;\n\n}\nc = 4;"})) == (2, 1, 0)
    # the Write made k.cu known: a second Write is diffed against it
    assert t.feed("Write", json.dumps({"file_path": "k.cu", "content": "a = 1;\nc = 5;"})) == (1, 0, 1)
    assert t.feed("Write", json.dumps({"file_path": "k.cu", "content": "a = 1;\nc = 4;"})) == (1, 1, 1)
    multi = json.dumps({"file_path": "k.cu", "edits": [{"old_string": "a = 1;", "new_string": "a = 2;"},
                                                        {"old_string": "a = 2;", "new_string": "a = 3;"}]})
    assert t.feed("MultiEdit", multi) == (2, 0, 2)      # a = 2; is deleted in the same call: not re-added
    patch = "*** Begin Patch\n*** Update File: k.cu\n@@\n-c = 4;\n+a = 1;\n+    \n*** End Patch"
    assert t.feed("apply_patch", json.dumps(patch)) == (1, 1, 1)
    assert t.feed("shell", json.dumps({"command": ["bash", "-lc",
                                                   "apply_patch <<'EOF'\n" + patch + "\nEOF"]})) == (1, 1, 1)
    ours = json.dumps({"path": "k.cu", "old_string": "x = 0;", "new_string": "c = 4;"})
    assert t.feed("edit_file", ours) == (1, 1, 1)
    assert t.feed("Read", json.dumps({"file_path": "k.cu"})) == (0, 0, 0)
    assert t.feed("Edit", "not json") == (0, 0, 0)


# ---- the statistics on the fixtures -------------------------------------------------------------------
def test_per_session_counts(a):
    s = a.sessions.set_index("session_id")
    expected = {
        "cc-1": dict(human_messages=4, questions=2, information=1, directives=1, others=0, tool_calls=12,
                     tool_errors=1, harness_runs=4, message_rows=37, sidechain_rows=4, input_tokens=532,
                     output_tokens=704, cache_read_tokens=23460, cache_write_tokens=800, gains=3,
                     gains_after_question=1, lines_added=11, lines_readded=3, malformed_lines=1, duplicate_lines=12),
        "cx-1": dict(human_messages=1, questions=0, information=0, directives=1, others=0, tool_calls=7,
                     tool_errors=1, harness_runs=4, message_rows=19, sidechain_rows=0, input_tokens=4000,
                     output_tokens=1000, cache_read_tokens=11000, cache_write_tokens=0, gains=2,
                     gains_after_question=0, lines_added=5, lines_readded=1, malformed_lines=1, duplicate_lines=0),
    }
    for sid, values in expected.items():
        assert {k: int(s.loc[sid, k]) for k in values} == values
    assert s.loc["cc-1", "cost_usd"] == pytest.approx(0.020520, abs=1e-12)
    assert s.loc["cx-1", "cost_usd"] == pytest.approx(0.016375, abs=1e-12)
    assert s.loc["cc-1", "best_geomean"] == 0.70 and s.loc["cx-1", "best_geomean"] == 0.66
    assert s.loc["cc-1", "readded_rate"] == pytest.approx(3 / 11)
    assert s.loc["cx-1", "readded_rate"] == pytest.approx(1 / 5)
    assert set(s["metric"]) == {"geomean_vs_fa3"}


def test_overall(a):
    o = a.overall
    assert {k: o[k] for k in ("sessions", "human_messages", "questions", "information", "directives", "others",
                              "tool_calls", "tool_errors", "harness_runs", "gains", "gains_after_question",
                              "lines_added", "lines_readded", "input_tokens", "output_tokens",
                              "cache_read_tokens", "cache_write_tokens", "questions_followed_by_gain",
                              "gains_moved_or_rejected")} == dict(
        sessions=2, human_messages=5, questions=2, information=1, directives=2, others=0, tool_calls=19,
        tool_errors=2, harness_runs=8, gains=5, gains_after_question=1, lines_added=16, lines_readded=4,
        input_tokens=4532, output_tokens=1704, cache_read_tokens=34460, cache_write_tokens=800,
        questions_followed_by_gain=2, gains_moved_or_rejected=1)
    assert o["cost_usd"] == pytest.approx(0.036895, abs=1e-12)
    assert o["readded_rate"] == 0.25
    assert o["median_seconds_question_to_gain"] == 270.0 and o["median_calls_question_to_gain"] == 3.5
    assert o["gpus"] == ["NVIDIA H200"]


def test_steering_messages(a):
    st = a.steering.set_index("id")
    assert list(a.steering["cls"]) == ["directive", "question", "information", "question", "directive"]
    assert st.loc["u11", "layer"] == "measurement" and st.loc["u11", "agent_layer"] == "memory"
    assert st.loc["u11", "moved_layer"] and st.loc["u11", "rejected_limit"]
    assert st.loc["u27", "layer"] == "parallelism" and st.loc["u27", "agent_layer"] == "pipelining"
    assert st.loc["u27", "moved_layer"] and not st.loc["u27", "rejected_limit"]
    assert not st.loc["u19", "moved_layer"] and not st.loc["u19", "rejected_limit"]   # no agent text since u11
    assert list(a.steering["calls_before"]) == [0, 3, 5, 8, 0]
    assert a.layers.set_index("layer")["questions"].to_dict() == {"measurement": 1, "parallelism": 1}


def test_best_so_far_curve(a):
    r = a.runs
    assert list(r["eval_id"]) == ["ev-cc-1", "tu3#0", "ev-cc-3", "ev-cc-4", "call_1#0", "call_3#0", "call_5#0",
                                  "call_7#0"]
    assert list(r["tool_index"]) == [1, 3, 8, 10, 1, 3, 5, 7]
    assert list(r["best_so_far"]) == [0.5, 0.55, 0.6, 0.7, 0.4, 0.6, 0.6, 0.66]
    assert list(r["is_gain"]) == [False, True, True, True, False, True, False, True]
    assert list(r["scored"]) == [True] * 6 + [False, True]        # the failed build is never a best


def test_gain_events(a):
    g = a.gains
    assert list(g["eval_id"]) == ["tu3#0", "ev-cc-3", "ev-cc-4", "call_3#0", "call_7#0"]
    assert list(g["gain_pct"].round(2)) == [10.0, 9.09, 16.67, 50.0, 10.0]
    assert list(g["preceded_by"]) == ["directive", "information", "question", "directive", "nothing"]
    assert list(g["message_id"].fillna("-")) == ["u01", "u19", "u27", "rollout-2026-01-11T09-00-00-cx-1:4", "-"]
    assert list(g["moved_layer"]) == [False, False, True, False, False]
    assert list(g["rejected_limit"]) == [False] * 5
    assert list(g["seconds_since_message"].fillna(-1)) == [100.0, 60.0, 60.0, 104.0, -1]
    assert list(g["calls_since_message"].fillna(-1)) == [3, 3, 2, 3, -1]


def test_attribution(a):
    att = a.attribution.set_index("preceded_by")
    assert att["gains"].to_dict() == {"question": 1, "information": 1, "directive": 2, "other": 0, "nothing": 1}
    assert att["share"].to_dict() == {"question": 0.2, "information": 0.2, "directive": 0.4, "other": 0.0,
                                      "nothing": 0.2}


def test_question_to_next_gain(a):
    q = a.question_to_gain
    assert list(q["message_id"]) == ["u11", "u27"]
    assert list(q["seconds_to_gain"]) == [480.0, 60.0]
    assert list(q["calls_to_gain"]) == [5.0, 2.0]
    assert list(q["gain_eval_id"]) == ["ev-cc-3", "ev-cc-4"]


def test_readded_lines(a):
    e = a.edits
    assert list(zip(e["session_id"], e["tool_index"], e["added"], e["readded"], e["deleted"])) == [
        ("cc-1", 2, 1, 0, 1), ("cc-1", 6, 2, 0, 1), ("cc-1", 9, 6, 2, 0), ("cc-1", 11, 1, 0, 1),
        ("cc-1", 12, 1, 1, 1), ("cx-1", 2, 1, 0, 1), ("cx-1", 4, 1, 1, 1), ("cx-1", 6, 3, 0, 1)]
    assert 7 not in set(e.loc[e["session_id"] == "cc-1", "tool_index"])     # the failed Edit tu12
    assert list(e["cum_rate"].round(4)) == [0.0, 0.0, 0.2222, 0.2, 0.2727, 0.0, 0.5, 0.2]


def test_arms_side_by_side(a):
    arms = a.arms.set_index("arm")
    assert list(a.arms["arm"]) == ["tools_only", "human"]        # the baseline arm first
    assert arms.loc["tools_only", ["sessions", "human_messages", "questions", "tool_calls", "harness_runs", "gains",
                                   "gains_after_question"]].tolist() == [1, 1, 0, 7, 4, 2, 0]
    assert arms.loc["human", ["sessions", "human_messages", "questions", "tool_calls", "harness_runs", "gains",
                              "gains_after_question"]].tolist() == [1, 4, 2, 12, 4, 3, 1]
    assert arms.loc["tools_only", "best_vs_fa3_median"] == 0.66 and arms.loc["human", "best_vs_fa3_max"] == 0.70
    # both sessions are scored on x FA3: the x original columns stay empty instead of mixing the metrics
    assert arms["sessions_vs_fa3"].tolist() == [1, 1] and arms["sessions_vs_original"].tolist() == [0, 0]
    assert arms["best_vs_original_max"].isna().all()
    assert arms.loc["tools_only", "readded_rate"] == pytest.approx(0.2)
    assert arms.loc["human", "readded_rate"] == pytest.approx(3 / 11)


@pytest.mark.parametrize("threshold, gains, attribution", [
    (0.10, 4, {"question": 1, "information": 0, "directive": 2, "other": 0, "nothing": 1}),
    (0.20, 1, {"question": 0, "information": 0, "directive": 1, "other": 0, "nothing": 0}),
])
def test_gain_threshold(root, threshold, gains, attribution):
    a = an.analyze(root, gain_threshold=threshold)
    assert a.overall["gains"] == gains
    assert a.attribution.set_index("preceded_by")["gains"].to_dict() == attribution


# ---- our campaigns: bank questions steer too; sparse sessions; bad input ----------------------------------
def _t(minute: int) -> datetime:
    return datetime(2026, 2, 1, 0, minute, tzinfo=timezone.utc)


def test_bank_questions_count_as_steering(tmp_path):
    w = TraceWriter(tmp_path, "camp")
    w.append("sessions", [{"source": "workbench", "arm": "bank"}])
    w.append("messages", [
        {"message_id": "m1", "block_index": 0, "role": "user", "block_type": "text", "is_human": True,
         "text": "Optimize the kernel.", "ts": _t(0)},
        {"message_id": "m2", "block_index": 0, "role": "assistant", "block_type": "text", "is_human": False,
         "text": "I am tuning the shared memory tile; this is the limit.", "ts": _t(2)},
        {"message_id": "m3", "block_index": 0, "role": "user", "block_type": "text", "is_human": False,
         "text": "Is the pipeline deep enough?", "ts": _t(3)}])
    w.append("tool_calls", [{"call_id": f"c{i}", "tool_index": i, "tool_name": "run_harness", "started_at": _t(m),
                             "ended_at": _t(m)} for i, m in ((1, 1), (2, 4))])
    w.append("evaluations", [{"eval_id": "e1", "call_id": "c1", "geomean_vs_original": 1.0, "ts": _t(1)},
                             {"eval_id": "e2", "call_id": "c2", "geomean_vs_original": 1.3, "ts": _t(4)}])
    w.append("interventions", [{"intervention_id": "i1", "source": "bank", "trigger": "claim",
                                "question_text": "Is the pipeline deep enough?", "layer": "pipelining", "ts": _t(3)}])
    a = an.analyze(tmp_path)
    assert list(a.steering["origin"]) == ["human", "bank"]
    bank = a.steering.iloc[1]
    assert (bank["cls"], bank["layer"], bank["agent_layer"]) == ("question", "pipelining", "memory")
    assert bank["moved_layer"] and bank["rejected_limit"]
    g = a.gains.iloc[0]
    assert (g["metric"], g["preceded_by"], g["message_origin"], round(g["gain_pct"], 6)) == (
        "geomean_vs_original", "question", "bank", 30.0)
    assert a.overall["human_messages"] == 1 and a.overall["gains_moved_or_rejected"] == 1


def test_sparse_session_does_not_break(tmp_path):
    TraceWriter(tmp_path, "bare").append("sessions", [{"source": "workbench"}])
    a = an.analyze(tmp_path)
    assert a.overall["sessions"] == 1 and a.overall["gains"] == 0 and a.overall["tool_calls"] == 0
    assert math.isnan(a.overall["readded_rate"])
    assert a.gains.empty and a.edits.empty and list(a.arms["arm"]) == ["(none)"]


def test_bad_input(tmp_path):
    with pytest.raises(an.TraceError, match="no such trace directory"):
        an.analyze(tmp_path / "missing")
    with pytest.raises(an.TraceError, match="no sessions found"):
        an.analyze(tmp_path)


def test_same_session_in_two_roots_is_refused(root, tmp_path):
    import shutil
    shutil.copytree(root, tmp_path / "copy")
    with pytest.raises(an.TraceError, match="appears more than once"):
        an.analyze([root, tmp_path / "copy"])


def test_connect_is_plain_sql(root):
    con = an.connect(root)
    assert con.execute("SELECT count(*) FROM messages WHERE is_human").fetchone()[0] == 5
    assert isinstance(con.execute("SELECT * FROM interventions").df(), pd.DataFrame)
