"""`workbench import`: Claude Code transcripts, Codex rollouts and our own campaigns into trace tables.

    workbench import PATH... [-o data/traces] [--format auto|claude_code|codex|workbench] [--arm ARM]

A PATH is a transcript file, a directory searched for `*.jsonl`, or a campaign directory (anything holding
`sessions/<id>/part-*.parquet`). With `--format auto` each JSONL file is recognised by its first lines.
Importing a session again replaces its rows, so re-running an import never duplicates anything.
Malformed lines are counted and listed (first 20), never fatal.
"""
from __future__ import annotations

import contextlib
import gc
import sys
from pathlib import Path

from workbench import validate
from workbench.arguments import Parser, UsageError, refuse
from workbench.locks import LockHeld
from workbench.traces.importers.claude_code import import_claude_code
from workbench.traces.importers.codex import import_codex
from workbench.traces.importers.common import (MALFORMED_SHOWN, ImportedSession, file_kind, open_transcript,
                                               parse_json_line, write_session)
from workbench.traces.writer import SessionTaken
from workbench.traces.importers.workbench import find_trace_roots, import_workbench

FORMATS = ("claude_code", "codex", "workbench")
IMPORTERS = {"claude_code": import_claude_code, "codex": import_codex, "workbench": import_workbench}
SNIFF_LINES = 20

__all__ = ["import_main", "import_paths", "sniff", "import_claude_code", "import_codex", "import_workbench"]


def sniff(path: Path) -> str | None:
    """claude_code, codex or None, from the first parseable lines of a JSONL file."""
    try:
        with open_transcript(path) as handle:
            for _, raw in zip(range(SNIFF_LINES), handle):
                obj, why = parse_json_line(raw)
                if why:
                    continue
                if not isinstance(obj, dict):
                    continue
                if "payload" in obj and "type" in obj:
                    return "codex"
                if "uuid" in obj or "sessionId" in obj or obj.get("type") in ("summary", "user", "assistant"):
                    return "claude_code"
    except OSError:
        return None
    return None


def collect(paths: list[Path], fmt: str = "auto") -> tuple[dict, list[str]]:
    """Group input files by format; returns ({format: [paths]}, [problems])."""
    found = {f: [] for f in FORMATS}
    problems = []
    for path in paths:
        if not path.exists():
            problems.append(f"{path}: no such file or directory")
            continue
        if path.is_dir() and fmt in ("auto", "workbench") and find_trace_roots(path):
            found["workbench"].append(path)
            continue
        if not path.is_dir() and not path.is_file():
            problems.append(f"{path}: {file_kind(path.stat().st_mode)}, not a transcript file; skipped")
            continue
        files = [path] if path.is_file() else sorted(path.rglob("*.jsonl"))
        if not files:
            problems.append(f"{path}: no *.jsonl transcripts and no campaign traces found")
        for file in files:
            if not file.is_file():          # a FIFO would block the import, a device never end
                problems.append(f"{file}: {file_kind(file.stat().st_mode)}, not a transcript file; skipped")
                continue
            kind = fmt if fmt != "auto" else sniff(file)
            if kind is None:
                problems.append(f"{file}: not a Claude Code or Codex transcript (pass --format to force one)")
                continue
            found[kind].append(file)
    return found, problems


def import_paths(paths, out, fmt: str = "auto", arm: str | None = None, campaign_id: str | None = None,
                 log=None) -> list[ImportedSession]:
    """Import every transcript under paths into the trace root `out`; returns the imported sessions."""
    log = log or (lambda _line: None)
    found, problems = collect([Path(p) for p in paths], fmt)
    for problem in problems:
        log(problem)
    out = Path(out)
    imported = []
    for kind, files in found.items():
        if not files:
            continue
        if kind == "workbench":
            same = [f for f in files if out.resolve() in [r.resolve() for r in find_trace_roots(f)]]
            for f in same:
                log(f"{f}: already the output trace root; skipped")
            files = [f for f in files if f not in same]
        for session in IMPORTERS[kind](files, arm=arm, campaign_id=campaign_id):
            named = ", ".join(str(f) for f in session.tally.files) or kind
            if session.tally.error:
                log(f"{named}: not imported: {session.tally.error}")
                continue
            if not any(session.tables.get(t) for t in ("messages", "tool_calls", "evaluations")):
                # e.g. --format forced on a file of another kind: an empty session is no import
                why = f"; {session.tally.malformed[0][2]}" if session.tally.malformed else ""
                log(f"{named}: no {kind} record in it ({len(session.tally.malformed)} malformed lines{why}); "
                    "nothing written")
                continue
            asked = session.session_id
            try:
                write_session(out, session)
            except SessionTaken as err:
                log(f"{named}: not imported: {err}")
                continue
            if session.session_id != asked:
                log(f"{named}: session id {asked} is another session's in {out}; imported as {session.session_id}")
            imported.append(session)
    return imported


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for the block (reference counting still frees everything). An
    import holds hundreds of thousands of parsed lines and rows, none in a reference cycle, until the session
    is written, and each full collection walked all of them: about 9 % of the CPU of a long import."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def import_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench import", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="transcript files, directories, or campaign dirs")
    parser.add_argument("-o", "--out", type=Path, default=Path("data/traces"), help="trace root (data/traces)")
    parser.add_argument("--format", default="auto", choices=("auto",) + FORMATS)
    parser.add_argument("--arm", help="experiment arm recorded on every imported session (e.g. tools_only)")
    parser.add_argument("--campaign-id", help="campaign id recorded on every imported session")
    args = parser.parse_args(argv)

    def log(line):
        print(f"workbench import: {line}", file=sys.stderr)

    try:
        missing = [str(p) for p in args.paths if not p.exists()]
        if missing:
            raise UsageError(f"{missing[0]}: no such file or directory; pass transcript files or folders")
        validate.output_dir(args.out, "-o/--out")
    except UsageError as err:
        return refuse("workbench import", err)
    try:
        with collector_paused():        # a process of its own: nothing else here makes garbage meanwhile
            sessions = import_paths(args.paths, args.out, args.format, args.arm, args.campaign_id, log=log)
    except LockHeld as err:       # another import of the same session is writing it right now
        log(str(err))
        return 2
    if not sessions:
        log("nothing imported; pass Claude Code / Codex JSONL files or a campaign directory")
        return 2
    malformed = []
    for s in sessions:
        counts = {t: len(rows) for t, rows in s.tables.items()}
        t = s.tally
        print(f"{s.session['source']:<11} {s.session_id}: {counts.get('messages', 0)} message rows, "
              f"{counts.get('tool_calls', 0)} tool calls, {counts.get('evaluations', 0)} evaluation rows "
              f"from {len(t.files)} file(s); {len(t.malformed)} malformed, {t.duplicate_lines} duplicate, "
              f"{t.ignored_lines} ignored, {t.usage_duplicates} repeated-usage lines; "
              f"{t.injected_blocks} injected block(s) not counted as human"
              + (f" ({', '.join(f'{k} {n}' for k, n in sorted(t.injected.items()))})" if t.injected else "")
              + f"; {t.harness_sightings} harness result(s) in tool output, {t.harness_seen_again} of them a run "
                "seen before")
        malformed += t.malformed
        if t.bad_times:
            file, line, value = t.bad_times[0]
            log(f"{s.session_id}: {len(t.bad_times)} timestamp(s) are not times (first {file}:{line}: {value}); "
                "those lines keep their place in the file and get no time of their own")
    for file, line, reason in malformed[:MALFORMED_SHOWN]:
        log(f"malformed line skipped: {file}:{line}: {reason}")
    if len(malformed) > MALFORMED_SHOWN:
        log(f"... and {len(malformed) - MALFORMED_SHOWN} more malformed lines")
    print(f"{len(sessions)} session(s) written to {args.out}")
    return 0


main = import_main
