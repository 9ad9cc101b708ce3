"""Our own campaigns (`campaigns/<id>/`) into a shared trace root such as `data/traces/`.

A campaign already writes the trace tables (writer.py layout `<root>/<table>/<session>/part-*.parquet`), so
importing is copying: find the trace root(s) inside the given directory, read every table of every session,
and write it to the destination as one compacted file per table. Two things are filled in on the way:
  * `source` / `source_file` / `source_line` where the campaign left them empty (the parquet part and row), so
    every row still says where it came from;
  * `evaluations` rows for harness runs that appear only inside tool output (a campaign killed between the tool
    result and the evaluation row), parsed exactly as for imported transcripts.
"""
from __future__ import annotations

import json
import stat
from pathlib import Path

import pyarrow.parquet as pq

from workbench.traces.importers.common import ImportedSession, ImportTally, failed_session, file_kind
from workbench.traces.importers.harness_output import evaluation_rows
from workbench.traces.schema import TABLES
from workbench.traces.writer import session_dirs, table_files

SEARCH_DEPTH = 3    # how deep below the given directory trace roots are looked for


def find_trace_roots(path: Path) -> list[Path]:
    """Directories that hold a `sessions/<id>/part-*.parquet` table: the path itself, or below it."""
    path = Path(path)
    if any(path.glob("sessions/*/part-*.parquet")):
        return [path]
    roots = []
    for depth in range(1, SEARCH_DEPTH + 1):
        pattern = "/".join(["*"] * depth) + "/sessions"
        for candidate in sorted(path.glob(pattern)):
            if any(candidate.glob("*/part-*.parquet")) and candidate.parent not in roots:
                roots.append(candidate.parent)
    return roots


def _rows(root: Path, table: str, session_id: str, tally: ImportTally) -> list[dict]:
    rows = []
    for part in table_files(root, table, session_id):
        tally.files.append(str(part))
        mode = part.stat().st_mode
        if not stat.S_ISREG(mode):              # a FIFO would block the import
            tally.bad(part, 0, f"{file_kind(mode)}, not a parquet file; skipped")
            continue
        try:
            data = pq.read_table(part).to_pylist()
        except Exception as err:         # a torn part from a killed writer: count it, keep the rest
            tally.bad(part, 0, f"unreadable parquet ({type(err).__name__})")
            continue
        for number, row in enumerate(data, start=1):
            row = {k: v for k, v in row.items() if k in TABLES[table].names}
            if "source_line" in TABLES[table].names and not row.get("source_file"):
                row["source_file"], row["source_line"] = str(part), number
            rows.append(row)
        tally.lines += len(data)
    return rows


def _session(root: Path, sid: str, arm: str | None, campaign_id: str | None) -> ImportedSession | None:
    tally = ImportTally()
    tables = {t: _rows(root, t, sid, tally) for t in TABLES}
    if not tables["sessions"]:
        return None
    session = dict(tables.pop("sessions")[-1])     # the last row written is the final state
    session["source"] = session.get("source") or "workbench"
    session["source_file"] = session.get("source_file") or str(root)
    if arm:
        session["arm"] = arm
    if campaign_id:
        session["campaign_id"] = campaign_id
    try:
        config = json.loads(session.get("config_json") or "{}")
    except ValueError:
        config = {"unreadable_config_json": session.get("config_json")}
    evaluated = {r.get("call_id") for r in tables["evaluations"]}
    for call in tables["tool_calls"]:
        if call.get("call_id") in evaluated or not call.get("output_text"):
            continue
        tables["evaluations"] += evaluation_rows(call["output_text"], session_id=sid, call_id=call.get("call_id"),
                                                 ts=call.get("ended_at"), source_file=call["source_file"],
                                                 source_line=call["source_line"])
    raw_id = None
    if isinstance(config, dict):
        raw_id = config.get("source_session_id")       # a copy of an import: the id it had in its transcript
        config["import"] = tally.to_dict() | {"files": [str(root)]}
        session["config_json"] = json.dumps(config)
    return ImportedSession(session=session, tables=tables, tally=tally,
                           raw_id=raw_id if isinstance(raw_id, str) else None)


def import_workbench(paths: list[Path], arm: str | None = None,
                     campaign_id: str | None = None) -> list[ImportedSession]:
    sessions = []
    for path in paths:
        for root in find_trace_roots(Path(path)):
            for session_dir in session_dirs(root, "sessions"):
                try:
                    session = _session(root, session_dir.name, arm, campaign_id)
                except Exception as err:     # a shape no rule foresaw: this session is not imported, in one line
                    session = failed_session([session_dir], "workbench", err)
                if session is not None:
                    sessions.append(session)
    return sessions
