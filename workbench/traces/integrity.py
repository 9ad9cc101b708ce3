"""Is every session of a trace root complete? One line per problem, for the report and the CLI to show.

An import records in its sessions row (config_json.rows_written) how many rows it wrote to each table, so a
session whose tables hold other counts was cut short or edited by hand. Rows of a session with no sessions row,
a transcript session with no messages, and an import whose swap was interrupted are reported too.
Counts come from the parquet footers: no table is read in full.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from workbench.traces.schema import TABLES
from workbench.traces.writer import live_parts, pending_replacements, read_table, session_dirs

TRANSCRIPT_SOURCES = ("claude_code", "codex")


def row_counts(root: str | Path, table: str) -> dict[str, int]:
    counts = {}
    for directory in session_dirs(root, table):
        total = 0
        for part in live_parts(directory):
            if not part.is_file():     # a FIFO would block the count (views.readable_parts names it)
                continue
            try:
                total += pq.ParquetFile(part).metadata.num_rows
            except Exception:          # a torn file: count it as missing rows
                continue
        counts[directory.name] = total
    return counts


def session_warnings(roots) -> list[str]:
    warnings = []
    for root in [Path(r) for r in roots]:
        for sid in pending_replacements(root):
            warnings.append(f"{root}: session {sid}: an import was cut short; run the same `workbench import` "
                            "again to finish it")
        sessions = read_table(root, "sessions")
        counts = {t: row_counts(root, t) for t in TABLES if t != "sessions"}
        known = set(sessions["session_id"]) if len(sessions) else set()
        for _, s in sessions.iterrows():
            sid = s["session_id"]
            try:
                config = json.loads(s.get("config_json") or "{}")
            except ValueError:
                config = {}
            written = config.get("rows_written") if isinstance(config, dict) else None
            if isinstance(written, dict):
                for table, expected in sorted(written.items()):
                    actual = counts.get(table, {}).get(sid, 0)
                    if table in counts and actual != expected:
                        warnings.append(f"{root}: session {sid}: {table} has {actual} rows, its import wrote "
                                        f"{expected}; re-import it")
            elif s.get("source") in TRANSCRIPT_SOURCES and not counts["messages"].get(sid):
                warnings.append(f"{root}: session {sid}: no messages table; re-import it")
        for table in ("messages", "tool_calls", "evaluations"):
            for sid in sorted(set(counts[table]) - known):
                warnings.append(f"{root}: {table} has rows of session {sid} but there is no sessions row for it")
    return warnings
