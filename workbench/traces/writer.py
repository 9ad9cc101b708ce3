"""Append-only parquet trace writer and reader.

Layout: <root>/<table>/<session_id>/part-<NNNNN>.parquet. Every append writes one small part file atomically
(temp file + rename), so a kill -9 loses at most the rows of the append in flight and many sessions coexist
without locks. `compact()` merges a session's parts into a single file per table when the session ends.
Every string is passed through `redact` first: API keys and other secrets never reach disk.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from workbench.traces.schema import TABLES

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN", "GITHUB_TOKEN")
SECRET_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(x-api-key|authorization|api[_-]?key)(\"?\s*[:=]\s*\"?)(Bearer\s+)?[A-Za-z0-9_\-\.]{12,}"),
]
REDACTED = "[REDACTED]"


def redact(text: str | None) -> str | None:
    """Remove anything that looks like a credential, and the values of known secret variables."""
    if not text:
        return text
    for name in SECRET_ENV_VARS:
        value = os.environ.get(name)
        if value and len(value) >= 8 and value in text:
            text = text.replace(value, REDACTED)
    for pattern in SECRET_PATTERNS:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def to_table(table: str, rows: Iterable[dict]) -> pa.Table:
    """Rows (dicts) to a pyarrow Table of the table's schema; unknown keys are an error, missing ones null."""
    schema = TABLES[table]
    rows = list(rows)
    unknown = {k for row in rows for k in row} - set(schema.names)
    if unknown:
        raise KeyError(f"trace table {table!r} has no column(s) {sorted(unknown)}")
    columns = {}
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if pa.types.is_string(field.type):
            values = [redact(str(v)) if v is not None else None for v in values]
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=schema)


class TraceWriter:
    def __init__(self, root: str | Path, session_id: str):
        self.root = Path(root)
        self.session_id = session_id

    def _dir(self, table: str) -> Path:
        return self.root / table / self.session_id

    def _next_part(self, directory: Path) -> Path:
        existing = sorted(directory.glob("part-*.parquet"))
        index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        return directory / f"part-{index:05d}.parquet"

    def append(self, table: str, rows: Iterable[dict]) -> Path | None:
        rows = [dict(row, session_id=row.get("session_id") or self.session_id) for row in rows]
        if not rows:
            return None
        arrow = to_table(table, rows)
        directory = self._dir(table)
        directory.mkdir(parents=True, exist_ok=True)
        path = self._next_part(directory)
        tmp = path.with_suffix(".tmp")
        pq.write_table(arrow, tmp)
        os.replace(tmp, path)
        return path

    def compact(self) -> None:
        """Merge each table's parts for this session into part-00000.parquet (one file per session per table)."""
        for table in TABLES:
            directory = self._dir(table)
            parts = sorted(directory.glob("part-*.parquet")) if directory.exists() else []
            if len(parts) <= 1:
                continue
            merged = pa.concat_tables([pq.read_table(p, schema=TABLES[table]) for p in parts])
            tmp = directory / "compact.tmp"
            pq.write_table(merged, tmp)
            for p in parts:
                p.unlink()
            os.replace(tmp, directory / "part-00000.parquet")


def read_table(root: str | Path, table: str, session_id: str | None = None):
    """All rows of one table under root (optionally one session) as a pandas DataFrame."""
    base = Path(root) / table
    pattern = f"{session_id}/part-*.parquet" if session_id else "*/part-*.parquet"
    parts = sorted(base.glob(pattern)) if base.exists() else []
    schema = TABLES[table]
    if not parts:
        return schema.empty_table().to_pandas()
    frames = [pq.read_table(p, schema=schema) for p in parts]
    return pa.concat_tables(frames).to_pandas()


def trim_parts(root: str | Path, table: str, session_id: str, column: str, committed: int,
               keep_null: bool = True, schema: pa.Schema | None = None) -> int:
    """Drop a session's rows whose `column` is past `committed` (written before a crash cut that step short),
    rewriting each part atomically. Rows with a null `column` are kept when keep_null. Returns rows dropped."""
    directory = Path(root) / table / session_id
    schema = schema or TABLES[table]
    dropped = 0
    for part in sorted(directory.glob("part-*.parquet")) if directory.exists() else []:
        data = pq.read_table(part, schema=schema)
        values = data.column(column).to_pylist()
        keep = [i for i, v in enumerate(values) if (v is None and keep_null) or (v is not None and v <= committed)]
        if len(keep) == len(values):
            continue
        dropped += len(values) - len(keep)
        if keep:
            tmp = part.with_suffix(".tmp")
            pq.write_table(data.take(keep), tmp)
            os.replace(tmp, part)
        else:
            part.unlink()
    return dropped
