"""What every importer shares: timestamps, the import tally, prices, joining tool outputs to their calls, and
writing one session's rows. Harness runs inside tool output are found by harness_output.py, text the client
injects into user turns by injected.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from workbench.redaction import redact
from workbench.traces.importers.harness_output import find_sightings
from workbench.traces.importers.run_identity import RunMerger
from workbench.traces.importers.values import fit_rows, fit_values, parse_ts  # noqa: F401  (parse_ts: re-exported)
from workbench.traces.schema import TABLES
from workbench.traces.writer import SessionTaken, replace_session

OUTPUT_HEAD_CHARS = 4000        # tool output kept in tool_calls.output_text / messages.text
MALFORMED_SHOWN = 20            # malformed lines listed by the CLI; all are counted
MAX_LINE_CHARS = 256 << 20      # a transcript line longer than this is counted as malformed, not read
MAX_JSON_DEPTH = 64             # deeper lines are malformed (real transcripts nest about 8 levels)

# USD per million tokens: (input, output, cache read, cache write). List prices, an estimate: the transcript
# does not say what was billed. Matched by substring of the model name, first match wins.
PRICES_PER_MTOK = [
    ("claude-opus-4-5", (5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4", (15.0, 75.0, 1.50, 18.75)),
    ("claude-sonnet-4", (3.0, 15.0, 0.30, 3.75)),
    ("claude-3-7-sonnet", (3.0, 15.0, 0.30, 3.75)),
    ("claude-haiku-4-5", (1.0, 5.0, 0.10, 1.25)),
    ("claude-3-5-haiku", (0.8, 4.0, 0.08, 1.0)),
    ("gpt-5", (1.25, 10.0, 0.125, 0.0)),        # gpt-5, gpt-5-codex; OpenAI has no cache-write charge
    ("o3", (2.0, 8.0, 0.5, 0.0)),
    ("o4-mini", (1.1, 4.4, 0.275, 0.0)),
]

SESSION_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass
class ImportTally:
    """What happened to every input line; stored in sessions.config_json and printed by the CLI."""
    files: list = field(default_factory=list)
    lines: int = 0
    malformed: list = field(default_factory=list)   # (file, line, reason)
    duplicate_lines: int = 0        # the same line seen again (resumed sessions copy history)
    usage_duplicates: int = 0       # assistant lines that repeated an API message's usage
    orphan_results: int = 0         # tool results whose call never appeared
    ignored_lines: int = 0          # known kinds of line that carry no row (summaries, snapshots, echoes)
    injected: dict = field(default_factory=dict)    # kind -> blocks the client injected (never human; injected.py)
    harness_sightings: int = 0      # harness results found in tool output, every shape counted
    harness_seen_again: int = 0     # of those, a run already counted (read back, quoted): not a new run
    bad_times: list = field(default_factory=list)   # (file, line, value): a timestamp that is not a time
    error: str = ""                 # why the files could not be imported at all (failed_session)

    def bad(self, file, line: int, reason: str) -> None:
        self.malformed.append((str(file), line, reason))

    def bad_time(self, file, line: int, value) -> None:
        self.bad_times.append((str(file), line, repr(value)[:40]))

    def skip(self, kinds) -> None:
        for kind in kinds:
            self.injected[kind] = self.injected.get(kind, 0) + 1

    @property
    def injected_blocks(self) -> int:
        return sum(self.injected.values())

    def to_dict(self) -> dict:
        return {"files": [str(f) for f in self.files], "lines": self.lines,
                "malformed_lines": len(self.malformed),
                "malformed": [f"{f}:{n}: {r}" for f, n, r in self.malformed[:MALFORMED_SHOWN]],
                "duplicate_lines": self.duplicate_lines, "usage_duplicates": self.usage_duplicates,
                "orphan_results": self.orphan_results, "ignored_lines": self.ignored_lines,
                "injected_blocks": self.injected_blocks, "injected": dict(sorted(self.injected.items())),
                "harness_sightings": self.harness_sightings, "harness_seen_again": self.harness_seen_again,
                "bad_timestamps": len(self.bad_times),
                "bad_timestamp_lines": [f"{f}:{n}: {v}" for f, n, v in self.bad_times[:MALFORMED_SHOWN]]}


@dataclass
class ImportedSession:
    session: dict                   # one `sessions` row
    tables: dict                    # table name -> list of row dicts
    tally: ImportTally
    raw_id: str | None = None       # the id the transcript gives, before safe_session_id (None: the same)

    @property
    def session_id(self) -> str:
        return self.session["session_id"]


def _lines(handle, limit: int):
    """(number, line) for every line; a line longer than `limit` characters is (number, None) and is read
    past in pieces, never held whole."""
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not raw.endswith("\n"):
            while True:                      # skip the rest of the oversized line
                rest = handle.readline(1 << 20)
                if not rest or rest.endswith("\n"):
                    break
            yield number, None
            continue
        yield number, raw


def json_depth(obj, limit: int) -> int:
    """How many containers deep obj nests, counted without recursion and stopping past limit."""
    depth, level = 0, [obj]
    while depth <= limit:
        level = [o for o in level if isinstance(o, (dict, list))]
        if not level:
            return depth
        depth += 1
        level = [v for o in level for v in (o.values() if isinstance(o, dict) else o)]
    return depth


def parse_json_line(raw: str):
    """(object, '') or (None, why): a malformed or hostile line is a reason, never an exception. A byte-order
    mark in front of a line (a file that starts with one, or two files concatenated) is not part of it."""
    try:
        obj = json.loads(raw.lstrip("\ufeff"))
    except ValueError as err:
        return None, f"invalid JSON ({getattr(err, 'msg', err)})"
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    # a line with fewer opening brackets than the limit cannot nest deeper (the common case: no walk)
    if raw.count("{") + raw.count("[") > MAX_JSON_DEPTH and json_depth(obj, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return None, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    return obj, ""


def read_jsonl(path: Path, tally: ImportTally, problem) -> list[tuple[int, dict]]:
    """(line number, object) for every well-formed line; `problem(obj)` names what is wrong with an object, or
    returns "" for a good one. Bad lines (invalid or too deeply nested JSON, lines over MAX_LINE_CHARS) are
    counted in the tally, never raised."""
    records = []
    try:
        handle = open_transcript(path)
    except OSError as err:
        tally.bad(path, 0, f"cannot be read ({err.strerror or err})")
        return records
    with handle:
        for number, raw in _lines(handle, MAX_LINE_CHARS):
            if raw is None:
                tally.lines += 1
                tally.bad(path, number, f"line longer than {MAX_LINE_CHARS} characters")
                continue
            if raw.isspace():               # a blank line (raw is never empty here): no copy made to tell
                continue
            tally.lines += 1
            obj, why = parse_json_line(raw)
            if not why:
                why = "not a JSON object" if not isinstance(obj, dict) else problem(obj)
            if why:
                tally.bad(path, number, why)
                continue
            records.append((number, obj))
    return records


class NotRegularFile(OSError):
    """A FIFO, socket, device or directory where a transcript file was expected."""


FILE_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
              stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory"}


def file_kind(mode: int) -> str:
    return FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")


def open_transcript(path):
    """A transcript opened as text, decoded by its byte-order mark (UTF-8 with or without one, UTF-16). Only a
    regular file is opened: a FIFO or a device would block the import or never end (NotRegularFile). The
    file is opened without blocking and checked on the open descriptor, so a file swapped for a FIFO between
    a listing and the open is refused too."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"{file_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        start = os.pread(fd, 4, 0)
    except BaseException:
        os.close(fd)
        raise
    encoding = "utf-16" if start[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    return open(fd, encoding=encoding, errors="replace")


def failed_session(files, kind: str, err: Exception) -> ImportedSession:
    """What an importer returns for files it could not import: no rows, and the reason in one line."""
    tally = ImportTally(files=[str(f) for f in files])
    tally.error = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    return ImportedSession(session={"session_id": "", "source": kind}, tables={}, tally=tally)


def safe_session_id(raw: str) -> str:
    """Session ids become directory names: keep them to a safe alphabet, and never a secret (a directory's
    name is not redacted like the rows in it): an id holding one becomes `redacted-<sha1 of it>`."""
    cleaned = SESSION_ID_UNSAFE.sub("_", str(raw)).strip("._") or "session"
    if redact(cleaned) != cleaned:
        return "redacted-" + hashlib.sha1(str(raw).encode("utf-8", "replace")).hexdigest()[:16]
    return cleaned[:120]


def price(model: str | None, input_tokens=0, output_tokens=0, cache_read=0, cache_write=0) -> float | None:
    if not model:
        return None
    for needle, (p_in, p_out, p_read, p_write) in PRICES_PER_MTOK:
        if needle in model:
            return (input_tokens * p_in + output_tokens * p_out + cache_read * p_read
                    + cache_write * p_write) / 1e6
    return None


def head(text: str | None, limit: int = OUTPUT_HEAD_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def attach_results(results, calls: dict, tally: ImportTally, session_id: str, error_line: int) -> list[dict]:
    """Join each tool output to its call (output head, error, end time, duration); count outputs with no call.
    results: (call_id, output, is_error, ts, source_file, source_line), in time order. error_line: which line of
    a failed output is its error message (Claude Code puts it first, Codex last). Returns the evaluation rows of
    the harness runs in the outputs, each run once (harness_output.RunMerger)."""
    merger = RunMerger()
    for call_id, output, is_error, ts, file, number in results:
        call = calls.get(call_id)
        if call is None:
            tally.orphan_results += 1
            continue
        duration = (ts - call["started_at"]).total_seconds() if ts and call["started_at"] else None
        call.update(output_text=head(output), is_error=is_error, ended_at=ts, duration_s=duration,
                    error=head(output.strip().splitlines()[error_line], 300) if is_error and output.strip() else None)
        merger.add(find_sightings(output), call_id=call_id, ts=ts, source_file=file, source_line=number)
    tally.harness_sightings += merger.sightings
    tally.harness_seen_again += merger.seen_again
    return merger.rows(session_id)


# ---- writing -----------------------------------------------------------------------------------------
def _owner(source, raw_id: str) -> tuple:
    return (str(source), redact(str(raw_id)))        # as the sessions row keeps it (redacted on disk)


def _owners(existing) -> set:
    """(source, id in the source) of each sessions row a root holds under one id."""
    owners = set()
    for row in existing.to_dict("records"):
        try:
            config = json.loads(row.get("config_json") or "{}")
        except ValueError:
            config = {}
        raw = config.get("source_session_id") if isinstance(config, dict) else None
        owners.add(_owner(row.get("source"), raw or row.get("session_id")))
    return owners


def session_id_choices(imported: ImportedSession) -> list[str]:
    """The ids a session may be written under: its own, then one made from its source and its id there (the
    same for every import of it, so a re-import replaces its earlier copy)."""
    sid, source = imported.session_id, imported.session.get("source")
    digest = hashlib.sha1(f"{source}:{imported.raw_id or sid}".encode("utf-8", "replace")).hexdigest()[:8]
    return [sid, safe_session_id(f"{sid[:100]}.{source}.{digest}")]


def write_session(root: str | Path, imported: ImportedSession) -> dict:
    """Replace whatever the root held for this session with the imported rows; returns rows per table.

    The new copy is written beside the old one and swapped in (writer.replace_session), under a lock on the
    session id: a kill leaves the old or the new copy, and a parallel import of the same session is refused
    (LockHeld) instead of duplicating rows. The sessions row records how many rows each table got, so the
    report can tell a complete session from an interrupted one.

    A session replaces only itself: the same source and the same id there (`source_session_id`). When the id is
    another session's (a transcript whose sessionId is a recorded campaign's id; `team/alpha` and `team_alpha`,
    which make the same safe id), it is written under session_id_choices' second id, and `imported.session_id`
    says which; SessionTaken when that one is taken too."""
    owner = _owner(imported.session.get("source"), imported.raw_id or imported.session_id)
    tables = {t: rows for t, rows in imported.tables.items() if t != "sessions"}   # fitted as they are converted
    counts = {t: len(rows) for t, rows in tables.items() if rows}
    session = dict(imported.session)
    try:
        config = json.loads(session.get("config_json") or "{}")
    except ValueError:
        config = {}
    if isinstance(config, dict):
        config["rows_written"] = counts
        config["source_session_id"] = owner[1]
        session["config_json"] = json.dumps(config)
    fit_rows("sessions", [session])
    choices = session_id_choices(imported)
    for n, sid in enumerate(choices):
        try:
            written = replace_session(root, sid, {"sessions": [session], **tables}, fit=fit_values,
                                      may_replace=lambda existing: _owners(existing) <= {owner})
        except SessionTaken:
            if n == len(choices) - 1:
                raise
            continue
        imported.session["session_id"] = sid
        return {"sessions": 1, **{t: written.get(t, 0) for t in tables}}
