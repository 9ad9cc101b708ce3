"""No input file breaks an import or overwrites another session: byte-order marks, timestamps that are not times,
sessions whose id is taken, FIFOs, wrong types anywhere (a small seeded fuzz), and a report with a best of 0."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from workbench.traces.importers import import_main, import_paths
from workbench.traces.writer import TraceWriter, read_table

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
CAMPAIGN = ROOT / "data" / "campaigns" / "c-offline-1"
START = datetime(2026, 1, 10, 10, 0, tzinfo=timezone.utc)


def _transcript(session_id: str, prompt: str = "Make kernel.cu faster.", stamps=None) -> str:
    """A small Claude Code transcript: a person's prompt, then three assistant lines (timestamps: stamps)."""
    stamps = stamps or [(START + timedelta(seconds=n)).isoformat() for n in range(4)]
    lines = [{"type": "user", "uuid": f"{session_id}-u0", "parentUuid": None, "sessionId": session_id,
              "timestamp": stamps[0], "message": {"role": "user", "content": prompt}}]
    for n, ts in enumerate(stamps[1:], start=1):
        lines.append({"type": "assistant", "uuid": f"{session_id}-a{n}", "parentUuid": lines[-1]["uuid"],
                      "sessionId": session_id, "timestamp": ts,
                      "message": {"id": f"msg{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": f"step {n}"}],
                                  "usage": {"input_tokens": 10, "output_tokens": 5}}})
    return "".join(json.dumps(line, allow_nan=True) + "\n" for line in lines)


def _texts(root, session_id=None) -> list[str]:
    return read_table(root, "messages", session_id)["text"].tolist()


# ---- byte-order marks ---------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_transcript_with_a_byte_order_mark_keeps_its_first_line(tmp_path, encoding):
    path = tmp_path / "bom.jsonl"
    path.write_text(_transcript("s-bom", prompt="the first prompt"), encoding=encoding)
    (session,) = import_paths([path], tmp_path / "out")
    assert session.tally.malformed == [] and "the first prompt" in _texts(tmp_path / "out")


def test_a_byte_order_mark_in_the_middle_of_a_file_is_not_a_malformed_line(tmp_path):
    path = tmp_path / "joined.jsonl"
    one, two = _transcript("s-a").splitlines(keepends=True), _transcript("s-a").splitlines(keepends=True)
    path.write_text("".join(one[:2]) + "\ufeff" + "".join(two[2:]), encoding="utf-8")
    (session,) = import_paths([path], tmp_path / "out")
    assert session.tally.malformed == [] and len(_texts(tmp_path / "out")) == 4


# ---- timestamps that are not times -------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1e15, 1e20, float("nan"), float("inf"), -float("inf"), 10**30, "year 3000", [1]])
def test_a_timestamp_that_is_not_a_time_is_one_warning_and_the_rest_is_imported(tmp_path, capsys, bad):
    good = [(START + timedelta(seconds=n)).isoformat() for n in range(4)]
    path = tmp_path / "t.jsonl"
    path.write_text(_transcript("s-time", stamps=[good[0], bad, good[2], good[3]]))
    assert import_main([str(path), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("timestamp(s) are not times") == 1, err
    assert "1 timestamp(s)" in err and "t.jsonl:2" in err
    messages = read_table(tmp_path / "out", "messages")
    assert sorted(messages["text"]) == ["Make kernel.cu faster.", "step 1", "step 2", "step 3"]
    config = json.loads(read_table(tmp_path / "out", "sessions").iloc[0]["config_json"])
    assert config["import"]["bad_timestamps"] == 1


def test_a_codex_rollout_with_a_numeric_timestamp_among_text_ones(tmp_path):
    rollout = FIXTURES / "codex" / "2026" / "01" / "11" / "rollout-2026-01-11T09-00-00-cx-1.jsonl"
    lines = rollout.read_text().splitlines()
    first = json.loads(lines[1])
    first["timestamp"] = 1e20
    lines[1] = json.dumps(first)
    copy = tmp_path / "r2.jsonl"
    copy.write_text("\n".join(lines) + "\n")
    shutil.copy(rollout, tmp_path / "r1.jsonl")              # the same session in two files: they are sorted
    (session,) = import_paths([copy, tmp_path / "r1.jsonl"], tmp_path / "out")
    assert len(session.tally.bad_times) == 1 and session.tables["messages"]


# ---- sessions whose id is taken ------------------------------------------------------------------------
def test_a_transcript_named_like_a_recorded_campaign_leaves_the_campaign_alone(tmp_path, capsys):
    out = tmp_path / "traces"
    import_paths([CAMPAIGN], out)
    before = {t: len(read_table(out, t, "c-offline-1")) for t in ("messages", "tool_calls", "evaluations")}
    assert min(before.values()) > 0
    path = tmp_path / "c-offline-1.jsonl"
    path.write_text(_transcript("c-offline-1"))
    for _ in range(2):                                         # a re-import replaces its own copy, nothing else
        assert import_main([str(path), "-o", str(out)]) == 0
    assert "session id c-offline-1 is another session's" in capsys.readouterr().err
    after = {t: len(read_table(out, t, "c-offline-1")) for t in before}
    assert after == before
    ids = sorted(read_table(out, "sessions")["session_id"])
    assert len(ids) == 2 and ids[0] == "c-offline-1" and ids[1].startswith("c-offline-1.claude_code.")
    assert len(_texts(out, ids[1])) == 4
    import_paths([CAMPAIGN], out)                               # and the campaign's own re-import is itself
    assert {t: len(read_table(out, t, "c-offline-1")) for t in before} == before


def test_ids_that_sanitise_to_the_same_name_do_not_overwrite_each_other(tmp_path):
    out = tmp_path / "traces"
    for name in ("team/alpha", "team_alpha"):
        (tmp_path / f"{name.replace('/', '-')}.jsonl").write_text(_transcript(name, prompt=f"prompt of {name}"))
    files = sorted(tmp_path.glob("*.jsonl"))
    for _ in range(2):
        sessions = import_paths(files, out)
        assert len({s.session_id for s in sessions}) == 2
    ids = sorted(read_table(out, "sessions")["session_id"])
    assert len(ids) == 2 and ids[0] == "team_alpha"
    assert sorted(t for t in _texts(out) if t.startswith("prompt")) == ["prompt of team/alpha", "prompt of team_alpha"]


def test_a_session_id_holding_a_key_is_not_a_directory_name(tmp_path):
    key = "sk-ant-api03-" + "SeSsIoNiDkEy0123456789_" * 4
    path = tmp_path / "k.jsonl"
    path.write_text(_transcript(key))
    for _ in range(2):                          # and a re-import replaces it
        (session,) = import_paths([path], tmp_path / "out")
    assert session.session_id.startswith("redacted-") and len(read_table(tmp_path / "out", "sessions")) == 1
    assert not [p for p in (tmp_path / "out").rglob("*") if "SeSsIoNiDkEy" in p.name]


# ---- files that are not files -------------------------------------------------------------------------
def test_a_fifo_among_transcripts_is_skipped_not_waited_for(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.jsonl").write_text(_transcript("s-good"))
    os.mkfifo(folder / "blocked.jsonl")
    traces = tmp_path / "camp"
    shutil.copytree(CAMPAIGN / "traces", traces)
    os.mkfifo(traces / "messages" / "c-offline-1" / "part-00077.parquet")
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "import", str(folder), str(traces),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert "blocked.jsonl: a FIFO, not a transcript file; skipped" in done.stderr
    assert "Traceback" not in done.stderr and "s-good" in done.stdout and "c-offline-1" in done.stdout
    report = subprocess.run([sys.executable, "-m", "workbench.cli", "report", str(traces), "-o",
                             str(tmp_path / "r.html")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert report.returncode == 0 and "not a regular file" in report.stderr, report.stderr


# ---- the report with a best of 0 -------------------------------------------------------------------------
def test_the_report_survives_a_best_geomean_of_zero(tmp_path):
    from workbench.traces import analysis as an
    from workbench.traces.report import build_report

    w = TraceWriter(tmp_path, "zero")
    w.append("sessions", [{"source": "workbench", "arm": "bank"}])
    w.append("messages", [{"message_id": "m1", "block_index": 0, "role": "user", "block_type": "text",
                           "is_human": True, "text": "Is the tile too small?", "ts": START}])
    w.append("tool_calls", [{"call_id": f"c{i}", "tool_index": i, "tool_name": "run_harness",
                             "started_at": START + timedelta(seconds=i)} for i in (1, 2, 3, 4)])
    w.append("evaluations", [{"eval_id": f"e{i}", "call_id": f"c{i}", "geomean_vs_original": g,
                              "ts": START + timedelta(seconds=i)} for i, g in ((1, 0.0), (2, 0.0), (3, 0.5), (4, 1.0))])
    a = an.analyze(tmp_path)
    assert a.gains["geomean"].tolist() == [0.5, 1.0]             # 0 -> 0 is no gain; 0 -> 0.5 is one
    assert a.gains["gain_pct"].isna().tolist() == [True, False] and a.gains["gain_pct"].iloc[1] == 100.0
    assert build_report([tmp_path], tmp_path / "r.html").stat().st_size > 0


# ---- a small fuzz: wrong types and numbers anywhere, truncated lines ---------------------------------------
WRONG = [None, "", "x", -1e15, 1e20, float("nan"), float("inf"), [], {}, [1, 2], {"a": 1}, True, 10**30, "9" * 40,
         -1, 0, "2026-13-45T99:99:99Z", [{"type": None}], {"type": "text", "text": 5}]


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _paths(value, prefix + (index,))


def _mutated(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        try:
            obj = json.loads(lines[i])
        except ValueError:
            continue
        places = [p for p in _paths(obj) if p]
        if rng.random() < 0.1 or not places:
            lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]          # cut short
            continue
        place, target = rng.choice(places), obj
        for step in place[:-1]:
            target = target[step]
        target[place[-1]] = json.loads(json.dumps(rng.choice(WRONG)))
        lines[i] = json.dumps(obj)
    return lines


def test_no_mutated_transcript_gives_an_error(tmp_path):
    sources = sorted(FIXTURES.rglob("*.jsonl"))
    rng = random.Random(20261201)
    for n in range(120):
        source = rng.choice(sources)
        path = tmp_path / f"in{n}" / source.name
        path.parent.mkdir()
        path.write_text("\n".join(_mutated(source.read_text().splitlines(), rng)) + "\n")
        said = []
        import_paths([path], tmp_path / "out", log=said.append)
        unexpected = [line for line in said if "not imported:" in line]
        assert not unexpected, (source.name, unexpected)
