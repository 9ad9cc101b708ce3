import datetime as dt

import pyarrow.parquet as pq
import pytest

from workbench.traces.schema import TABLES
from workbench.traces.writer import TraceWriter, read_table, redact


def test_append_read_compact(tmp_path):
    w = TraceWriter(tmp_path, "s1")
    now = dt.datetime.now(dt.timezone.utc)
    for turn in range(3):
        w.append("messages", [{"message_id": f"m{turn}", "block_index": 0, "turn": turn, "role": "assistant",
                               "block_type": "text", "text": f"turn {turn}", "ts": now}])
    TraceWriter(tmp_path, "s2").append("messages", [{"message_id": "x", "block_index": 0, "text": "other"}])
    assert len(list((tmp_path / "messages" / "s1").glob("part-*.parquet"))) == 3
    assert len(read_table(tmp_path, "messages")) == 4
    w.compact()
    parts = list((tmp_path / "messages" / "s1").glob("part-*.parquet"))
    assert len(parts) == 1 and pq.read_schema(parts[0]).equals(TABLES["messages"])
    df = read_table(tmp_path, "messages", "s1")
    assert list(df.text) == ["turn 0", "turn 1", "turn 2"] and set(df.session_id) == {"s1"}
    w.append("messages", [{"message_id": "m3", "block_index": 0, "text": "after compaction"}])
    assert len(read_table(tmp_path, "messages", "s1")) == 4     # resume appends after the compacted part


def test_unknown_column_is_an_error(tmp_path):
    with pytest.raises(KeyError, match="no column"):
        TraceWriter(tmp_path, "s").append("messages", [{"nonsense": 1}])


def test_secrets_never_reach_disk(tmp_path, monkeypatch):
    key = "sk-ant-api03-" + "A1b2C3d4" * 8
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    w = TraceWriter(tmp_path, "s")
    w.append("tool_calls", [{"call_id": "c", "tool_name": "bash", "input_json": f'{{"cmd": "echo {key}"}}',
                             "output_text": "x-api-key: " + "Zz9" * 10}])
    blob = b"".join(p.read_bytes() for p in tmp_path.rglob("*.parquet"))
    assert key.encode() not in blob and b"Zz9Zz9Zz9" not in blob
    assert redact("token sk-ant-xyz12345678 here") == "token [REDACTED] here"


def test_empty_table_has_schema(tmp_path):
    df = read_table(tmp_path, "interventions")
    assert list(df.columns) == TABLES["interventions"].names and len(df) == 0
