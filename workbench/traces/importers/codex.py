"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) into trace tables.

Each line is `{timestamp, type, payload}`:
  * `session_meta` (session id, cwd, cli version), `turn_context` (model; one per user turn);
  * `response_item`: the conversation itself — `message` (user/assistant/developer), `reasoning`,
    `function_call` / `function_call_output` and `custom_tool_call` / `custom_tool_call_output` paired by
    `call_id` (apply_patch arrives as a custom tool call or as a shell command);
  * `event_msg`: UI events. `token_count` carries *cumulative* usage: each event's difference from the previous
    one is the usage of the model calls since then (a total that goes down means the counter restarted, e.g. on
    resume: the new total is the difference). `user_message` / `agent_message` echo response items and are
    skipped, so nothing is counted twice.
Files that carry the same session id are one session; a line repeated verbatim across them is kept once.
User messages that Codex writes itself (environment context, AGENTS.md instructions) are not human (injected.py).
Tool output comes as a string, a JSON string `{output, metadata: {exit_code}}`, a list of `input_text` items, or
(newer CLIs) text under an `Exit code: N` / `Wall time: ...` / `Output:` header; a non-zero exit code is an error.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from workbench.traces.importers.common import (ImportedSession, ImportTally, attach_results, failed_session, head,
                                               price, read_jsonl, safe_session_id)
from workbench.traces.importers.values import bad_time, count, parse_ts, text, text_id
from workbench.traces.importers.injected import IMAGE_WITHOUT_TEXT, split_injected

EXEC_HEADER = re.compile(r"\AExit code: (-?\d+)\n(?:Wall time: [^\n]*\n)?(?:Total output lines: \d+\n)?Output:\n?")
TOOL_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
TOOL_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens")


def _read(path: Path, tally: ImportTally) -> list[tuple[int, dict, str]]:
    def problem(obj: dict) -> str:
        ok = isinstance(obj.get("payload"), dict) and "type" in obj
        return "" if ok else "not a {timestamp, type, payload} object"
    return [(n, obj, json.dumps(obj, sort_keys=True)) for n, obj in read_jsonl(path, tally, problem)]


def _session_key(path: Path, records) -> str:
    for _, obj, _ in records:
        if obj["type"] == "session_meta" and text_id(obj["payload"].get("id")):
            return text_id(obj["payload"]["id"])
    return path.stem


def _output(payload: dict) -> tuple[str, bool | None]:
    """Tool output text and error flag, from any of the shapes in the module docstring."""
    raw = payload.get("output")
    exit_code, success = None, None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and ("output" in parsed or "metadata" in parsed):
            raw = parsed
    if isinstance(raw, dict):
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        exit_code = metadata.get("exit_code")
        success = raw.get("success")
        raw = raw.get("output", raw.get("content", ""))
    if isinstance(raw, list):
        raw = "\n".join(text(item.get("text", "")) or "" if isinstance(item, dict) else text(item) for item in raw)
    output = raw if isinstance(raw, str) else (text(raw) if raw is not None else "")
    header = EXEC_HEADER.match(output)
    if header:
        exit_code, output = int(header.group(1)), output[header.end():]
    is_error = success is False or (exit_code is not None and exit_code != 0)
    return output, is_error


def _call_input(payload: dict) -> str:
    if payload["type"] == "function_call":
        arguments = payload.get("arguments")
        return arguments if isinstance(arguments, str) else text(arguments)
    if payload["type"] == "custom_tool_call":
        return json.dumps(payload.get("input"), ensure_ascii=False)
    return json.dumps(payload.get("action"), ensure_ascii=False)


def import_session(key: str, paths: list[Path], per_file: dict, tally: ImportTally, arm: str | None = None,
                   campaign_id: str | None = None) -> ImportedSession:
    session_id = safe_session_id(key)
    tally.files = [str(p) for p in paths]
    seen, records = set(), []
    for path in paths:
        for number, obj, canonical in per_file[path]:
            if canonical in seen:
                tally.duplicate_lines += 1
                continue
            seen.add(canonical)
            if bad_time(obj.get("timestamp")):
                tally.bad_time(path, number, obj.get("timestamp"))
            records.append((parse_ts(obj.get("timestamp")), number, str(path), obj))

    messages, calls, outputs, evaluations = [], {}, [], []
    models, meta = Counter(), {}
    model, turn = None, 0
    previous_total, pending_rows, carried = None, [], None

    def add(row):
        messages.append(row)
        if row["role"] == "assistant":
            pending_rows.append(row)

    for ts, number, file, obj in records:
        kind, payload = obj["type"], obj["payload"]
        ptype = payload.get("type")
        base = dict(session_id=session_id, message_id=f"{Path(file).stem}:{number}", turn=turn,
                    is_sidechain=False, ts=ts, source_file=file, source_line=number)
        if kind == "session_meta":
            meta = payload
            tally.ignored_lines += 1
        elif kind == "turn_context":
            model = text_id(payload.get("model")) or model
            turn += 1
        elif kind == "event_msg" and ptype == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            total = info.get("total_token_usage")
            if not isinstance(total, dict):
                continue
            total = {f: count(total.get(f)) for f in TOKEN_FIELDS}
            if previous_total and all(total[f] >= previous_total[f] for f in TOKEN_FIELDS):
                delta = {f: total[f] - previous_total[f] for f in TOKEN_FIELDS}
            else:
                delta = total
            previous_total = total
            if carried:
                delta = {f: delta[f] + carried[f] for f in TOKEN_FIELDS}
                carried = None
            if not any(delta.values()):
                continue
            if not pending_rows:            # usage before any row to put it on: keep it for the next one
                carried = delta
                continue
            row = pending_rows[0]
            uncached = delta["input_tokens"] - delta["cached_input_tokens"]
            row.update(input_tokens=(row.get("input_tokens") or 0) + uncached,
                       output_tokens=(row.get("output_tokens") or 0) + delta["output_tokens"],
                       cache_read_tokens=(row.get("cache_read_tokens") or 0) + delta["cached_input_tokens"],
                       cache_write_tokens=row.get("cache_write_tokens") or 0)
            row["cost_usd"] = price(row.get("model"), row["input_tokens"], row["output_tokens"],
                                    row["cache_read_tokens"], 0)
            pending_rows.clear()
        elif kind == "response_item" and ptype == "message":
            role = text_id(payload.get("role"))
            role = "system" if role in ("developer", "system") else role
            content = payload.get("content")
            items = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
            humans, images = 0, 0
            for index, item in enumerate(items):
                item = item if isinstance(item, dict) else {"type": "text", "text": str(item)}
                if item.get("type") in ("input_image", "image"):
                    images += 1
                    add(dict(base, block_index=index, role=role, block_type="image", is_human=False, text=None))
                    continue
                said, human = text(item.get("text")), False
                if role == "user":
                    typed, kinds = split_injected(said, "codex")
                    tally.skip(kinds[:1])
                    human = bool(typed.strip())
                    said = typed if kinds and human else said
                    humans += human
                add(dict(base, block_index=index, role=role, block_type="text", is_human=human, text=said,
                         model=model if role == "assistant" else None))
            if role == "user" and images and not humans:
                tally.skip([IMAGE_WITHOUT_TEXT] * images)
            if role == "assistant" and model:
                models[model] += 1
        elif kind == "response_item" and ptype == "reasoning":
            summary = payload.get("summary") if isinstance(payload.get("summary"), list) else []
            thought = "\n".join(text(s.get("text", "")) or "" for s in summary if isinstance(s, dict)) or None
            add(dict(base, block_index=0, role="assistant", block_type="thinking", is_human=False, text=thought,
                     model=model))
        elif kind == "response_item" and ptype in TOOL_CALL_TYPES:
            call_id = text_id(payload.get("call_id")) or text_id(payload.get("id")) or base["message_id"]
            input_json = _call_input(payload)
            name = text_id(payload.get("name")) or ("local_shell" if ptype == "local_shell_call" else ptype)
            calls[call_id] = dict(session_id=session_id, call_id=call_id, turn=turn, tool_name=name,
                                  input_json=input_json, started_at=ts, source_file=file, source_line=number)
            add(dict(base, block_index=0, role="assistant", block_type="tool_use", is_human=False,
                     text=head(input_json), model=model, tool_use_id=call_id, tool_name=name))
        elif kind == "response_item" and ptype in TOOL_OUTPUT_TYPES:
            output, is_error = _output(payload)
            call_id = text_id(payload.get("call_id"))
            outputs.append((call_id, output, is_error, ts, file, number))
            call = calls.get(call_id)
            add(dict(base, block_index=0, role="user", block_type="tool_result", is_human=False, text=head(output),
                     tool_use_id=call_id, tool_name=call["tool_name"] if call else None))
        else:
            tally.ignored_lines += 1        # UI echoes, compaction markers, kinds this importer does not use

    if carried and messages:    # usage after the last row: put it on the last assistant row
        last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
        if last is not None:
            uncached = carried["input_tokens"] - carried["cached_input_tokens"]
            last.update(input_tokens=(last.get("input_tokens") or 0) + uncached,
                        output_tokens=(last.get("output_tokens") or 0) + carried["output_tokens"],
                        cache_read_tokens=(last.get("cache_read_tokens") or 0) + carried["cached_input_tokens"],
                        cache_write_tokens=0)
            last["cost_usd"] = price(last.get("model"), last["input_tokens"], last["output_tokens"],
                                     last["cache_read_tokens"], 0)

    evaluations += attach_results(outputs, calls, tally, session_id, error_line=-1)
    tool_calls = list(calls.values())           # already in file order, which is time order
    for index, call in enumerate(tool_calls, start=1):
        call["tool_index"] = index

    stamps = [r[0] for r in records if r[0] is not None]
    session = dict(session_id=session_id, source="codex", source_file=";".join(tally.files),
                   started_at=min(stamps) if stamps else None, ended_at=max(stamps) if stamps else None,
                   campaign_id=campaign_id, arm=arm, agent="external",
                   model=models.most_common(1)[0][0] if models else model,
                   config_json=json.dumps({"import": tally.to_dict(), "cwd": text(meta.get("cwd")),
                                           "codex_version": text(meta.get("cli_version"))}))
    return ImportedSession(session=session, tables={"messages": messages, "tool_calls": tool_calls,
                                                    "evaluations": evaluations}, tally=tally, raw_id=key)


def import_codex(paths: list[Path], arm: str | None = None, campaign_id: str | None = None) -> list[ImportedSession]:
    """Read Codex rollout files; files with the same session id are merged into one session."""
    read_tally = ImportTally()
    per_file = {Path(p): _read(Path(p), read_tally) for p in paths}
    groups = {}
    for path, records in per_file.items():
        groups.setdefault(_session_key(path, records), []).append(path)
    sessions = []
    for key, group in sorted(groups.items()):
        group = sorted(group, key=lambda p: (min((t.isoformat() for r in per_file[p]
                                                  if (t := parse_ts(r[1].get("timestamp"))) is not None),
                                                 default="~"), str(p)))
        tally = ImportTally()
        names = {str(p) for p in group}
        tally.malformed = [m for m in read_tally.malformed if m[0] in names]
        tally.lines = sum(len(per_file[p]) for p in group) + len(tally.malformed)
        try:
            sessions.append(import_session(key, group, per_file, tally, arm=arm, campaign_id=campaign_id))
        except Exception as err:         # a shape no rule foresaw: this session is not imported, said in one line
            sessions.append(failed_session(group, "codex", err))
    return sessions
