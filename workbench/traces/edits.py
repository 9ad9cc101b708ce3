"""Re-added lines: which lines an agent adds that it deleted earlier in the same session.

**Re-added lines.** From successful edit tool calls, in order: Claude Code `Edit`/`MultiEdit`
(old_string → new_string) and `Write` (content), our `edit_file`/`write_file`, Codex `apply_patch` patches (as a
tool or inside a shell command). Deleted and added lines are the diff of old and new text (a Write over a file
whose content is known from earlier in the session diffs against it; otherwise all its lines are added). Only
*significant* lines count: not blank and not made only of brackets, braces, semicolons and commas. An added line
is *re-added* when it is byte-identical to a line deleted by an earlier edit of the session.
"""
from __future__ import annotations

import difflib
import json
import re

EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "edit_file", "write_file", "apply_patch", "str_replace_editor",
              "str_replace_based_edit_tool", "create_file")
TRIVIAL_LINE = re.compile(r"[\s{}()\[\];,]*")


def significant(line: str) -> bool:
    return bool(line.strip()) and not TRIVIAL_LINE.fullmatch(line)


def _diff(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    deleted, added = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            deleted += old[i1:i2]
        if op in ("replace", "insert"):
            added += new[j1:j2]
    return deleted, added


def _find_patch(value) -> str | None:
    if isinstance(value, str):
        return value if "*** Begin Patch" in value else None
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = _find_patch(item)
            if found:
                return found
    return None


def _patch_changes(patch: str) -> list[tuple[str, str, list[str], list[str]]]:
    """(path, mode, deleted, added) per file of an apply_patch patch."""
    changes, current = [], None
    for line in patch.splitlines():
        match = re.match(r"\*\*\* (Update|Add|Delete) File: (.+)", line)
        if match:
            current = (match.group(2).strip(), match.group(1).lower(), [], [])
            changes.append(current)
        elif line.startswith("*** "):
            continue
        elif current is not None and line.startswith("+"):
            current[3].append(line[1:])
        elif current is not None and line.startswith("-"):
            current[2].append(line[1:])
    return changes


class EditTracker:
    """Feeds one session's edit calls in order; knows file contents where a Write or Add showed them."""

    def __init__(self):
        self.known: dict[str, list[str]] = {}
        self.deleted: set[str] = set()

    def changes(self, tool_name: str, input_json: str | None) -> list[tuple[list[str], list[str]]]:
        try:
            args = json.loads(input_json) if input_json else None
        except ValueError:
            return []
        patch = _find_patch(args)
        out = []
        if patch:
            for path, mode, deleted, added in _patch_changes(patch):
                if mode == "delete":
                    deleted = self.known.pop(path, [])
                elif mode == "add":
                    self.known[path] = list(added)
                else:
                    self.known.pop(path, None)
                out.append((deleted, added))
            return out
        if not isinstance(args, dict):
            return []
        path = str(args.get("file_path") or args.get("path") or "")
        edits = args.get("edits") if isinstance(args.get("edits"), list) else [args]
        pairs = [(e.get("old_string", e.get("old_str", e.get("old"))),
                  e.get("new_string", e.get("new_str", e.get("new")))) for e in edits if isinstance(e, dict)]
        pairs = [(o, n) for o, n in pairs if isinstance(o, str) and isinstance(n, str)]
        if pairs:
            for old, new in pairs:
                out.append(_diff(old.splitlines(), new.splitlines()))
                if path in self.known:
                    text = "\n".join(self.known[path])
                    if old in text:
                        self.known[path] = text.replace(old, new, 1 if not args.get("replace_all") else -1).split("\n")
                    else:
                        self.known.pop(path)
            return out
        content = next((args[k] for k in ("content", "file_text", "text") if isinstance(args.get(k), str)), None)
        if content is not None:
            new = content.splitlines()
            old = self.known.get(path)
            out.append(_diff(old, new) if old is not None else ([], new))
            self.known[path] = new
        return out

    def feed(self, tool_name: str, input_json: str | None) -> tuple[int, int, int]:
        """(significant lines added, of them re-added, significant lines deleted) by one call."""
        added = readded = deleted_n = 0
        new_deleted = []
        for deleted, added_lines in self.changes(tool_name, input_json):
            for line in added_lines:
                if significant(line):
                    added += 1
                    readded += line in self.deleted
            sig = [d for d in deleted if significant(d)]
            deleted_n += len(sig)
            new_deleted += sig
        self.deleted.update(new_deleted)      # only earlier edits count, not the same call
        return added, readded, deleted_n
