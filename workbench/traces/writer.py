"""Append-only parquet trace writer and reader, safe against kill -9 at any instruction.

Layout: <root>/<table>/<session_id>/part-<NNNNN>.parquet. Every append writes one part file durably (temp file,
fsync, then a hard link to the next free name, which fails instead of overwriting when another process took
that name), so a kill loses at most the rows of the append in flight and concurrent writers never overwrite
each other. Directories whose name starts with '.' are staging areas, never read.

`compact()` merges a session's parts into one file per table when the session ends, in an order where every
instant is consistent: the merged file is written and fsynced as `merged-<K>.parquet` (K = the last part it
covers), and only then are parts 0..K removed and the merged file renamed to part-00000. Readers
(`live_parts`) take a merged-K file in place of the parts up to K, so they see every row exactly once whether a
merge finished, was cut short, or never started; the next compaction or resume finishes an interrupted one.

`replace_session()` (imports) writes a session's new tables beside the old ones, under a lock on the session
id, and swaps them in one table at a time with a journal, so a kill leaves either the old copy or the new one
of each table, and the next import of that session finishes the swap.

Every string is passed through `workbench.redaction.redact` first (arrow_rows.to_table): API keys and other secrets
never reach disk.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from workbench.crash import crash_point
from workbench.locks import hold_lock
from workbench.redaction import REDACTED, redact, remembering  # noqa: F401  (re-exported)
from workbench.traces.arrow_rows import FREE_TEXT, redact_free_text, to_table  # noqa: F401  (re-exported)
from workbench.traces.schema import TABLES

PART = re.compile(r"^part-(\d{5,})\.parquet$")
MERGED = re.compile(r"^merged-(\d{5,})\.parquet$")
LOCKS_DIR = ".locks"


# ---- durable file operations ---------------------------------------------------------------------------
def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tmp_name(directory: Path, stem: str) -> Path:
    return directory / f"{stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"


def write_parquet_durable(table: pa.Table, path: Path) -> None:
    """Write `path` so that it exists complete or not at all (temp file, fsync, rename, fsync dir)."""
    tmp = _tmp_name(path.parent, path.stem)
    try:
        pq.write_table(table, tmp)
        _fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_tmps(directory: Path, stem: str) -> None:
    """Temp files `<stem>.<pid>.<random>.tmp` left by writers that were killed (their pid is gone)."""
    for tmp in directory.glob(f"{stem}.*.tmp"):
        pid = tmp.name[len(stem) + 1:].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            tmp.unlink(missing_ok=True)


def write_text_durable(path: Path, text: str) -> None:
    """Replace `path` with text so that a kill leaves the old file or the new one, never a torn one."""
    path = Path(path)
    tmp = _tmp_name(path.parent, path.name)
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    remove_stale_tmps(path.parent, path.name)


# ---- which files hold a session's rows -------------------------------------------------------------------
def _indexed(directory: Path, pattern: re.Pattern) -> list[tuple[int, Path]]:
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((int(m.group(1)), directory / name) for name in names if (m := pattern.match(name)))


def live_parts(directory: str | Path) -> list[Path]:
    """The files holding one session table's rows, in order: the newest merged-K file (if a merge was cut
    short) in place of parts 0..K, then the parts after K."""
    directory = Path(directory)
    parts = _indexed(directory, PART)
    merged = _indexed(directory, MERGED)
    if not merged:
        return [p for _, p in parts]
    last, path = merged[-1]
    return [path] + [p for i, p in parts if i > last]


def session_dirs(root: str | Path, table: str) -> list[Path]:
    base = Path(root) / table
    try:
        names = sorted(os.listdir(base))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [base / n for n in names if not n.startswith(".") and (base / n).is_dir()]


def table_files(root: str | Path, table: str, session_id: str | None = None) -> list[Path]:
    """Every live parquet file of a table under root (optionally one session's)."""
    dirs = [Path(root) / table / session_id] if session_id else session_dirs(root, table)
    return [p for d in dirs for p in live_parts(d)]


def finish_compaction(directory: str | Path) -> None:
    """Complete a merge that was cut short: drop the parts and older merged files the newest merged-K covers,
    then make it part-00000. Safe to call at any time (a no-op without a merged file)."""
    directory = Path(directory)
    merged = _indexed(directory, MERGED)
    if not merged:
        return
    last, path = merged[-1]
    for _, older in merged[:-1]:
        older.unlink(missing_ok=True)
    covered = [p for i, p in _indexed(directory, PART) if i <= last]
    for n, part in enumerate(covered):
        part.unlink(missing_ok=True)
        if n == 0:
            crash_point("compact.parts_unlinked")
    fsync_dir(directory)
    os.replace(path, directory / "part-00000.parquet")
    fsync_dir(directory)


class TraceWriter:
    def __init__(self, root: str | Path, session_id: str):
        self.root = Path(root)
        self.session_id = session_id

    def _dir(self, table: str) -> Path:
        return self.root / table / self.session_id

    def append(self, table: str, rows: Iterable[dict]) -> Path | None:
        rows = [dict(row, session_id=row.get("session_id") or self.session_id) for row in rows]
        if not rows:
            return None
        arrow = to_table(table, rows)
        directory = self._dir(table)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = _tmp_name(directory, "part")
        try:
            pq.write_table(arrow, tmp)
            _fsync_file(tmp)
            while True:     # the next free index; link() fails rather than replace another writer's part
                used = [i for i, _ in _indexed(directory, PART) + _indexed(directory, MERGED)]
                path = directory / f"part-{(max(used) + 1 if used else 0):05d}.parquet"
                try:
                    os.link(tmp, path)
                    break
                except FileExistsError:
                    continue
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(directory)
        return path

    def compact(self) -> None:
        """Merge each table's parts for this session into part-00000.parquet (one file per session per table)."""
        for table in TABLES:
            directory = self._dir(table)
            if not directory.is_dir():
                continue
            finish_compaction(directory)
            parts = live_parts(directory)
            if len(parts) <= 1:
                continue
            last = max(i for i, _ in _indexed(directory, PART))
            merged = pa.concat_tables([pq.read_table(p, schema=TABLES[table], use_threads=False) for p in parts])
            write_parquet_durable(merged, directory / f"merged-{last:05d}.parquet")
            crash_point("compact.merged_written")
            finish_compaction(directory)


def read_table(root: str | Path, table: str, session_id: str | None = None):
    """All rows of one table under root (optionally one session) as a pandas DataFrame."""
    parts = [p for p in table_files(root, table, session_id) if p.is_file()]     # a FIFO would block the read
    schema = TABLES[table]
    if not parts:
        return schema.empty_table().to_pandas()
    # in the calling thread: small parts, and no wait on pyarrow's shared pool (2 threads on a 2-core machine), which
    # another thread's stuck read would starve (CI, 2026-12-07: a watcher hung in Dataset.to_table)
    frames = [pq.read_table(p, schema=schema, use_threads=False) for p in parts]
    return pa.concat_tables(frames).to_pandas()


def trim_parts(root: str | Path, table: str, session_id: str, column: str, committed: int,
               keep_null: bool = True, schema: pa.Schema | None = None) -> int:
    """Drop a session's rows whose `column` is past `committed` (written before a crash cut that step short),
    rewriting each part atomically. Rows with a null `column` are kept when keep_null. Returns rows dropped."""
    directory = Path(root) / table / session_id
    schema = schema or TABLES[table]
    finish_compaction(directory)
    dropped = 0
    for part in live_parts(directory):
        data = pq.read_table(part, schema=schema, use_threads=False)
        values = data.column(column).to_pylist()
        keep = [i for i, v in enumerate(values) if (v is None and keep_null) or (v is not None and v <= committed)]
        if len(keep) == len(values):
            continue
        dropped += len(values) - len(keep)
        if keep:
            write_parquet_durable(data.take(keep), part)
        else:
            part.unlink()
    return dropped


# ---- replacing a whole session (imports) ----------------------------------------------------------------
def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _journal(root: Path, session_id: str) -> Path:
    return root / LOCKS_DIR / f"replace-{session_id}.json"


def _roll_forward(root: Path, session_id: str) -> None:
    """Finish the swap a journal describes (idempotent: every step checks what is already done)."""
    journal = _journal(root, session_id)
    if not journal.exists():
        return
    plan = json.loads(journal.read_text())
    token = plan["token"]
    for n, table in enumerate(plan["tables"]):
        target = root / table / session_id
        staged = root / table / f".{session_id}.new-{token}"
        marker = f".replace-{token}"
        if (target / marker).exists():
            pass                                     # swapped before the kill
        elif staged.exists():
            if not target.exists():
                os.rename(staged, target)
            elif not _exchange(staged, target):
                os.rename(target, root / table / f".{session_id}.old-{token}")
                os.rename(staged, target)
            fsync_dir(root / table)
        elif target.exists():                        # the new import has no rows for this table
            os.rename(target, root / table / f".{session_id}.old-{token}")
            fsync_dir(root / table)
        if n == 0:
            crash_point("replace.first_table_swapped")
    for table in TABLES:
        for leftover in (root / table).glob(f".{session_id}.*-{token}") if (root / table).exists() else []:
            shutil.rmtree(leftover, ignore_errors=True)
        (root / table / session_id / f".replace-{token}").unlink(missing_ok=True)
    journal.unlink()
    fsync_dir(journal.parent)


def pending_replacements(root: str | Path) -> list[str]:
    """Session ids whose replacement was cut short (finished by the next import of that session)."""
    directory = Path(root) / LOCKS_DIR
    return sorted(p.stem[len("replace-"):] for p in directory.glob("replace-*.json")) if directory.exists() else []


def session_lock(root: str | Path, session_id: str, what: str | None = None):
    return hold_lock(Path(root) / LOCKS_DIR / f"session-{session_id}.lock", what=what or f"session {session_id}")


class SessionTaken(ValueError):
    """The root holds another session under this id (replace_session's `may_replace` said no)."""


def replace_session(root: str | Path, session_id: str, rows_by_table: dict, may_replace=None, fit=None) -> dict:
    """Make the session's rows in every table exactly `rows_by_table` (tables not given end up empty), with a
    kill at any point leaving each table either old or new. Raises LockHeld while another process imports the
    same session, and SessionTaken when may_replace(root's sessions rows of this id) is false (checked under
    the lock). fit: what to do with a column pyarrow refuses (arrow_rows.to_table). Returns rows written per
    table."""
    root = Path(root)
    with remembering():         # a tool's input and output are in messages and tool_calls: redacted once
        arrows = {t: to_table(t, rows, fixed={"session_id": session_id}, fit=fit)  # bad rows fail before any write
                  for t, rows in rows_by_table.items() if rows}
    with session_lock(root, session_id, what=f"import of session {session_id}"):
        _roll_forward(root, session_id)                 # an earlier import of this session cut short
        if may_replace is not None and not may_replace(read_table(root, "sessions", session_id)):
            raise SessionTaken(f"session id {session_id} is taken in {root} by another session")
        staging = re.compile(rf"^\.{re.escape(session_id)}\.(new|old)-[0-9a-f]{{12}}$")
        for table in TABLES:                            # staging of an import killed before its journal
            for orphan in (root / table).iterdir() if (root / table).is_dir() else []:
                if staging.match(orphan.name):
                    shutil.rmtree(orphan, ignore_errors=True)
        token = uuid.uuid4().hex[:12]
        for table, arrow in arrows.items():
            staged = root / table / f".{session_id}.new-{token}"
            staged.mkdir(parents=True)
            write_parquet_durable(arrow, staged / "part-00000.parquet")
            (staged / f".replace-{token}").touch()
            crash_point("replace.table_staged")
        journal = _journal(root, session_id)
        journal.parent.mkdir(parents=True, exist_ok=True)
        write_text_durable(journal, json.dumps({"token": token, "tables": list(TABLES)}))
        _roll_forward(root, session_id)
    return {t: a.num_rows for t, a in arrows.items()}
