"""One machine-readable line per harness run: `workbench-result: {json}`, printed by `workbench check` last.

The human summary (`geomean_vs_fa3: 0.755   (A 0.748, ...)`) is for people and may change; this line is for
programs that read a check's stdout — importers of agent transcripts above all, where the stdout is all that is
left of a run. It carries what identifies the run (eval id, kernel sha, suite) and its verdict:

    workbench-result: {"schema": 1, "eval_id": "3f9c2a1b7d4e", "kernel_sha": "...", "kernel_path": "k.cu",
                       "suite": "dev26", "status": "evaluated", "all_correct": true, "stop_expr": "all_correct",
                       "stop_met": true, "geomeans": {"overall": {"original": 3.875, "fa3": 0.755}, "A": {...}},
                       "counts": {"passed": 26, "failed": 0, ...}, "failures": [], "gpu": "NVIDIA H200",
                       "flags": [], "error": "", "ts": "2026-01-12T09:00:40Z"}

(on one line). `status` is the suite's: evaluated | build_failed | forbidden | static_only | crashed | error; a
failed verification is `evaluated` with `all_correct` false and its failing scenarios in `failures`. Geomeans that
could not be computed are null, never NaN, so any JSON parser reads the line. Fields are only ever added; a reader
ignores the ones it does not know and `schema` goes up only when a field changes meaning (`problem` was added
with problems as data: absent in older lines, which are attention's).
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone

RESULT_PREFIX = "workbench-result:"
SCHEMA_VERSION = 1
FAILURES_LISTED = 20            # failing scenarios named in the line; the count is always complete
ERROR_CHARS = 500
RESULT_LINE = re.compile(r"^[ \t]*" + re.escape(RESULT_PREFIX) + r"[ \t]*(\{.*)$", re.M)
_DECODER = json.JSONDecoder()           # holds no state between calls: one for every line read


def _number(value):
    if value is None:
        return None
    value = float(value)
    return round(value, 6) if math.isfinite(value) else None


def result_record(result, ts: datetime | None = None) -> dict:
    """The line's object for a SuiteResult."""
    failing = [r for r in result.rows if r.status == "failed"]
    return {
        "schema": SCHEMA_VERSION,
        "eval_id": result.eval_id or None,
        "kernel_sha": result.kernel_sha,
        "kernel_path": result.kernel_path,
        "suite": result.suite,
        "problem": getattr(result, "problem", "") or None,
        "status": result.status,
        "all_correct": result.all_correct,
        "stop_expr": result.stop_expr or None,
        "stop_met": result.stop_met,
        "geomeans": {group: {name: _number(v) for name, v in values.items()}
                     for group, values in result.geomeans().items()},
        "counts": {k: v for k, v in result.counts().items()},
        "failures": [{"scenario": r.name, "category": r.category, "reason": r.reason}
                     for r in failing[:FAILURES_LISTED]],
        "gpu": result.gpu or None,
        "flags": list(result.flags),
        "error": (result.error or "")[:ERROR_CHARS],
        "ts": (ts or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def format_result_line(result, ts: datetime | None = None) -> str:
    return f"{RESULT_PREFIX} {json.dumps(result_record(result, ts), separators=(', ', ': '), allow_nan=False)}"


def find_result_lines(text: str | None) -> list[tuple[int, dict]]:
    """(offset, object) of every well-formed result line in text; a line cut short (a client truncated the
    output) is skipped."""
    found = []
    if not text or RESULT_PREFIX not in text:       # a line holds the prefix: no regex scan of text without it
        return found
    for match in RESULT_LINE.finditer(text):
        try:
            obj, _ = _DECODER.raw_decode(match.group(1))
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("schema") and "kernel_sha" in obj:
            found.append((match.start(), obj))
    return found


def parse_result_lines(text: str | None) -> list[dict]:
    return [obj for _, obj in find_result_lines(text)]
