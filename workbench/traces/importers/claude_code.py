"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`) into trace tables.

The format, and the traps this importer handles (tests/fixtures/transcripts/ holds one of each):
  * one line per content block; `uuid`/`parentUuid` form a tree; `isSidechain` marks sub-agent (Task) lines,
    whose "user" lines are prompts written by the main agent, never by a person;
  * assistant lines repeat `message.id` and `usage` for every block, and streaming partials repeat with growing
    `output_tokens`: usage is counted once per (`message.id`, `requestId`), keeping the largest output count,
    and written on the first line of that API message;
  * a resumed session copies earlier lines (same `uuid`) into a new file: files that share a uuid are one
    session, and each uuid is kept once (its first occurrence, so source_file/source_line point at the original);
  * tool results come back in user lines as `tool_result` blocks (`tool_use_id`, `is_error`); a tool use the
    person rejected comes back as an error result, and the reason they typed ("... the user said:\n<reason>")
    is a human message: it becomes a text row of its own, after the line's blocks;
  * user lines also carry text the client injects (IDE context, reminders, slash commands, hook output,
    interrupt markers, the compaction summary, `isMeta` lines): injected.py's rules cut it out and count it.
A line seen again (same `uuid`; lines without one: same content) is a duplicate before it is anything else, so
a resumed file's copy of a summary or compaction line counts as a duplicate, not as an ignored line.
Lines that are not JSON objects are counted as malformed and skipped.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from workbench.traces.importers.common import (ImportedSession, ImportTally, attach_results, failed_session, head,
                                               price, read_jsonl, safe_session_id)
from workbench.traces.importers.values import count, parse_ts, text, text_id
from workbench.traces.importers.values import number as finite
from workbench.traces.importers.injected import IMAGE_WITHOUT_TEXT, META_LINE, split_injected

REJECTED = "The user doesn't want to proceed with this tool use."
REJECTION_REASON = "the user said:\n"
REJECTION_NOTE = re.compile(r"\n\s*Note: The user's next message.*\Z", re.S)   # newer clients append this
NO_ROW_TYPES = ("summary", "file-history-snapshot", "queue-operation", "system")
SYNTHETIC_MODEL = "<synthetic>"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)     # sort key for lines before any timestamp
INPUT_JSON = json.JSONEncoder(ensure_ascii=False)     # json.dumps(..., ensure_ascii=False), built once, not per call


ID_FIELDS = ("uuid", "parentUuid", "sessionId", "requestId")


def _problem(obj: dict) -> str:
    """What makes a line unusable ("" for none); ids are made strings on the way (a number is an id too)."""
    for name in ID_FIELDS:
        if obj.get(name) is not None:
            value = text_id(obj[name])
            if value is None:
                return f"{name} is not a string"
            obj[name] = value
    if not isinstance(obj.get("type"), (str, type(None))):
        return "type is not a string"
    return ""


def _read(path: Path, tally: ImportTally) -> list[tuple[int, dict]]:
    return read_jsonl(path, tally, _problem)


def _group_files(per_file: dict[Path, list]) -> list[list[Path]]:
    """Files that share a uuid or a sessionId belong to one session (union-find)."""
    parent = {p: p for p in per_file}

    def find(p):
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    owner = {}
    for path, records in per_file.items():
        for _, obj in records:
            for key in (obj.get("uuid"), "session:" + str(obj.get("sessionId")) if obj.get("sessionId") else None):
                if key is None:
                    continue
                if key not in owner:
                    owner[key] = path
                elif owner[key] is not path:        # a key seen in this file again joins nothing
                    parent[find(path)] = find(owner[key])
    groups = {}
    for path in per_file:
        groups.setdefault(find(path), []).append(path)
    return list(groups.values())


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
    return []


def _result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text(c.get("text", "")) if isinstance(c, dict) else text(c) for c in content]
        return "\n".join(p for p in parts if p)
    return "" if content is None else text(content)


def _rejection_reason(output: str) -> str | None:
    """What the person typed when rejecting a tool use, or None."""
    if not output.startswith(REJECTED) or REJECTION_REASON not in output:
        return None
    return REJECTION_NOTE.sub("", output.split(REJECTION_REASON, 1)[1]).strip() or None


def _user_text(obj: dict, text: str | None, tally: ImportTally) -> tuple[bool, str | None]:
    """(is_human, text to store) for a text block of a main-chain user line; injected blocks are counted."""
    typed, kinds = split_injected(text, "claude_code")
    if obj.get("isMeta") or obj.get("isCompactSummary"):
        tally.skip(kinds[:1] or ["compaction_summary" if obj.get("isCompactSummary") else META_LINE])
        return False, text
    tally.skip(kinds[:1])
    return bool(typed.strip()), (typed if kinds and typed.strip() else text)


def _block_rows(obj: dict, message: dict, base: dict, usage_row: dict, tally: ImportTally, calls: dict,
                results: list) -> list[dict]:
    """The messages rows of one line's content blocks (base: the row fields every block shares); tool uses go to
    calls, tool outputs to results."""
    person = obj.get("type") == "user" and not obj.get("isSidechain")
    turn, ts, file, number = base["turn"], base["ts"], base["source_file"], base["source_line"]
    rows, humans, images, extra = [], 0, 0, []
    blocks = _blocks(message)
    for index, block in enumerate(blocks):
        btype = block.get("type") if isinstance(block.get("type"), str) and block.get("type") else "unknown"
        row = dict(base, block_index=index, block_type=btype, is_human=False, **(usage_row if index == 0 else {}))
        if btype == "text":
            row["text"] = text(block.get("text"))
            if person:
                row["is_human"], row["text"] = _user_text(obj, row["text"], tally)
                humans += row["is_human"]
        elif btype == "thinking":
            row["text"] = text(block.get("thinking"))
        elif btype == "image":
            images += 1
        elif btype == "tool_use":
            call_id, name = text_id(block.get("id")), text_id(block.get("name"))
            input_json = INPUT_JSON.encode(block.get("input"))
            row.update(text=head(input_json), tool_use_id=call_id, tool_name=name)
            calls[call_id] = dict(call_id=call_id, turn=turn, tool_name=name, input_json=input_json, started_at=ts,
                                  source_file=file, source_line=number)
        elif btype == "tool_result":
            output = _result_text(block)
            result_id = text_id(block.get("tool_use_id"))
            row.update(text=head(output), tool_use_id=result_id)
            results.append((result_id, output, bool(block.get("is_error")), ts, file, number))
            reason = _rejection_reason(output) if person and block.get("is_error") else None
            typed, kinds = split_injected(reason, "claude_code") if reason else ("", [])
            tally.skip(kinds[:1])
            if typed.strip():
                extra.append(dict(base, block_index=len(blocks) + len(extra), block_type="text", is_human=True,
                                  text=typed.strip(), tool_use_id=result_id))
        rows.append(row)
    if person and images and not humans and not obj.get("isMeta"):
        tally.skip([IMAGE_WITHOUT_TEXT] * images)
    return rows + extra


def import_session(paths: list[Path], tally: ImportTally, records_by_file: dict, arm: str | None = None,
                   campaign_id: str | None = None) -> ImportedSession:
    # order files by their first timestamp (the original before its resumptions), then by name
    def first_ts(path):
        stamps = [parse_ts(o.get("timestamp")) for _, o in records_by_file[path]]
        stamps = [s for s in stamps if s is not None]
        return (min(stamps).isoformat() if stamps else "~", str(path))

    paths = sorted(paths, key=first_ts) if len(paths) > 1 else list(paths)     # one file: no time to read
    tally.files = [str(p) for p in paths]

    # de-duplicate by uuid across files; carry timestamps forward so the merge sort is stable
    seen, records = set(), []
    for rank, path in enumerate(paths):
        last_ts = None
        for number, obj in records_by_file[path]:
            uuid = obj.get("uuid")
            key = uuid or json.dumps(obj, sort_keys=True)
            if key in seen:
                tally.duplicate_lines += 1
                continue
            seen.add(key)
            if obj.get("type") in NO_ROW_TYPES or not uuid:
                tally.ignored_lines += 1
                continue
            stamp = obj.get("timestamp")
            ts = parse_ts(stamp)                    # once: bad_time(stamp) is this test
            if stamp is not None and stamp != "" and ts is None:
                tally.bad_time(path, number, stamp)
            ts = ts or last_ts
            last_ts = ts
            records.append((ts, rank, number, str(path), obj))
    records.sort(key=lambda r: (r[0] or EPOCH, r[1], r[2]))

    raw_id = next((o.get("sessionId") for *_, o in records if o.get("sessionId")), None) or paths[0].stem
    session_id = safe_session_id(raw_id)

    # usage: one entry per (message.id, requestId), the largest output count wins, written on the first line
    best_usage, first_uuid, cost_field, usage_lines = {}, {}, {}, 0
    for _, _, _, _, obj in records:
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        usage = message.get("usage")
        if obj.get("type") != "assistant" or not isinstance(usage, dict):
            continue
        usage_lines += 1
        key = (text_id(message.get("id")) or obj["uuid"], obj.get("requestId"))
        first_uuid.setdefault(key, obj["uuid"])
        if key not in best_usage or count(usage.get("output_tokens")) > count(best_usage[key].get("output_tokens")):
            best_usage[key] = usage
            cost_field[key] = finite(obj.get("costUSD"))
    tally.usage_duplicates = usage_lines - len(best_usage)
    usage_at = {uuid: key for key, uuid in first_uuid.items()}

    messages, calls, results, evaluations = [], {}, [], []
    models = Counter()
    turn, turn_keys = 0, set()
    for ts, _, number, file, obj in records:
        kind = obj.get("type")
        message = obj.get("message")
        if kind not in ("user", "assistant"):
            tally.ignored_lines += 1
            continue
        if not isinstance(message, dict):
            tally.bad(file, number, f"{kind} line without a message object")
            continue
        if not isinstance(message.get("content"), (str, list)):
            tally.bad(file, number, f"{kind} message content is neither text nor a list of blocks")
            continue
        model = text_id(message.get("model")) if kind == "assistant" else None
        if kind == "assistant":
            key = (text_id(message.get("id")) or obj["uuid"], obj.get("requestId"))
            if key not in turn_keys:
                turn_keys.add(key)
                turn += 1
            if model and model != SYNTHETIC_MODEL and not obj.get("isSidechain"):
                models[model] += 1
        usage_row = {}
        if obj["uuid"] in usage_at:
            key = usage_at[obj["uuid"]]
            usage = best_usage[key]
            tokens = dict(input_tokens=count(usage.get("input_tokens")),
                          output_tokens=count(usage.get("output_tokens")),
                          cache_read_tokens=count(usage.get("cache_read_input_tokens")),
                          cache_write_tokens=count(usage.get("cache_creation_input_tokens")))
            cost = cost_field.get(key)
            if cost is None:
                cost = price(model, tokens["input_tokens"], tokens["output_tokens"], tokens["cache_read_tokens"],
                             tokens["cache_write_tokens"])
            usage_row = dict(tokens, cost_usd=cost)
        base = dict(session_id=session_id, message_id=obj["uuid"], parent_id=obj.get("parentUuid"), turn=turn,
                    role=text_id(message.get("role")) or kind, is_sidechain=bool(obj.get("isSidechain")), text=None,
                    ts=ts, model=model, source_file=file, source_line=number)
        messages += _block_rows(obj, message, base, usage_row, tally, calls, results)

    evaluations += attach_results(results, calls, tally, session_id, error_line=0)
    for row in messages:
        if row["block_type"] == "tool_result" and row.get("tool_use_id") in calls:
            row["tool_name"] = calls[row["tool_use_id"]]["tool_name"]
    tool_calls = sorted(calls.values(), key=lambda c: (c["started_at"] or EPOCH, c["source_file"], c["source_line"]))
    for index, call in enumerate(tool_calls, start=1):
        call.update(session_id=session_id, tool_index=index)

    stamps = [r[0] for r in records if r[0] is not None]
    cwd = next((text(o.get("cwd")) for *_, o in records if o.get("cwd")), None)
    version = next((text(o.get("version")) for *_, o in records if o.get("version")), None)
    session = dict(session_id=session_id, source="claude_code", source_file=";".join(tally.files),
                   started_at=min(stamps) if stamps else None, ended_at=max(stamps) if stamps else None,
                   campaign_id=campaign_id, arm=arm, agent="external",
                   model=models.most_common(1)[0][0] if models else None,
                   config_json=json.dumps({"import": tally.to_dict(), "cwd": cwd, "claude_code_version": version}))
    return ImportedSession(session=session, tables={"messages": messages, "tool_calls": tool_calls,
                                                    "evaluations": evaluations}, tally=tally, raw_id=raw_id)


def import_claude_code(paths: list[Path], arm: str | None = None,
                       campaign_id: str | None = None) -> list[ImportedSession]:
    """Read Claude Code JSONL files; files of one resumed session are merged into one session."""
    read_tally = ImportTally()
    per_file = {Path(p): _read(Path(p), read_tally) for p in paths}
    sessions = []
    for group in _group_files(per_file):
        tally = ImportTally()
        names = {str(p) for p in group}
        tally.malformed = [m for m in read_tally.malformed if m[0] in names]
        tally.lines = sum(len(per_file[p]) for p in group) + len(tally.malformed)
        try:
            sessions.append(import_session(group, tally, per_file, arm=arm, campaign_id=campaign_id))
        except Exception as err:         # a shape no rule foresaw: this session is not imported, said in one line
            sessions.append(failed_session(group, "claude_code", err))
    return sorted(sessions, key=lambda s: s.session_id)
