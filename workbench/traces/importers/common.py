"""What every importer shares: timestamps, the import tally, prices, harness results found in tool output,
and writing one session's rows.

Harness results reach a transcript as tool output, in two shapes:
  * the JSON object `SuiteResult.to_dict()` prints (`kernel_sha`, `suite`, `status`, `rows`, `geomeans`, ...),
    alone or among log lines, on one line or pretty-printed;
  * `key: value` lines such as `geomean_vs_fa3: 0.73` (also `geomean_vs_original`, `all_correct`, `stop_met`,
    `kernel_sha`, `suite`), which a person's script or an older harness prints.
Either becomes `evaluations` rows (one per scenario, or one suite-level row with `scenario` null), so speedups
are known for imported sessions too.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from workbench.traces.schema import TABLES
from workbench.traces.writer import replace_session

OUTPUT_HEAD_CHARS = 4000        # tool output kept in tool_calls.output_text / messages.text
MALFORMED_SHOWN = 20            # malformed lines listed by the CLI; all are counted

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

HARNESS_KEYS = ("kernel_sha", "suite", "all_correct", "stop_met")
HARNESS_LINE = re.compile(r"^[ \t]*(geomean_vs_[a-z0-9]+|all_correct|stop_met|kernel_sha|suite)[ \t]*[:=][ \t]*"
                          r"([^\s,;]+)[ \t]*$", re.M | re.I)
JSON_START = re.compile(r"(?m)^[ \t]*\{")
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

    def bad(self, file, line: int, reason: str) -> None:
        self.malformed.append((str(file), line, reason))

    def to_dict(self) -> dict:
        return {"files": [str(f) for f in self.files], "lines": self.lines,
                "malformed_lines": len(self.malformed),
                "malformed": [f"{f}:{n}: {r}" for f, n, r in self.malformed[:MALFORMED_SHOWN]],
                "duplicate_lines": self.duplicate_lines, "usage_duplicates": self.usage_duplicates,
                "orphan_results": self.orphan_results, "ignored_lines": self.ignored_lines}


@dataclass
class ImportedSession:
    session: dict                   # one `sessions` row
    tables: dict                    # table name -> list of row dicts
    tally: ImportTally

    @property
    def session_id(self) -> str:
        return self.session["session_id"]


def read_jsonl(path: Path, tally: ImportTally, problem) -> list[tuple[int, dict]]:
    """(line number, object) for every well-formed line; `problem(obj)` names what is wrong with an object, or
    returns "" for a good one. Bad lines are counted in the tally, never raised."""
    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            tally.lines += 1
            try:
                obj = json.loads(raw)
            except ValueError as err:
                tally.bad(path, number, f"invalid JSON ({err.msg})")
                continue
            why = "not a JSON object" if not isinstance(obj, dict) else problem(obj)
            if why:
                tally.bad(path, number, why)
                continue
            records.append((number, obj))
    return records


def safe_session_id(raw: str) -> str:
    """Session ids become directory names: keep them to a safe alphabet."""
    cleaned = SESSION_ID_UNSAFE.sub("_", str(raw)).strip("._") or "session"
    return cleaned[:120]


def parse_ts(value) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000.0 if value > 1e11 else value       # epoch ms or s
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    try:
        ts = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.astimezone(timezone.utc) if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


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


# ---- harness results inside tool output -------------------------------------------------------------
def _finite(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _scalar(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    number = _finite(text)
    return number if number is not None else text


def _is_suite_result(obj) -> bool:
    return isinstance(obj, dict) and "suite" in obj and "kernel_sha" in obj and ("rows" in obj or "geomeans" in obj)


def find_suite_results(text: str) -> list[dict]:
    """Every SuiteResult JSON object in text (whole text, or objects starting at the beginning of a line)."""
    if not text or '"kernel_sha"' not in text:
        return []
    found, decoder, pos = [], json.JSONDecoder(), 0
    for match in JSON_START.finditer(text):
        start = match.end() - 1
        if start < pos:
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if _is_suite_result(obj):
            found.append(obj)
            pos = end
    return found


def find_harness_lines(text: str) -> list[dict]:
    """`geomean_vs_fa3: 0.73`-style blocks; a key seen twice starts a new run."""
    runs, current = [], {}
    for match in HARNESS_LINE.finditer(text or ""):
        key, value = match.group(1).lower(), _scalar(match.group(2))
        if key in current:
            runs.append(current)
            current = {}
        current[key] = value
    if current:
        runs.append(current)
    return [r for r in runs if any(k.startswith("geomean_vs_") for k in r)]


def _scenario_flops(scenario: dict) -> float | None:
    try:
        from workbench.harness.scenarios import Scenario
        fields = Scenario.__dataclass_fields__
        return Scenario(**{k: v for k, v in scenario.items() if k in fields}).flops()
    except Exception:           # an odd scenario dict must not stop an import
        return None


def _suite_rows(result: dict, common: dict) -> list[dict]:
    overall = (result.get("geomeans") or {}).get("overall") or {}
    flags_suite = list(result.get("flags") or [])
    versions = result.get("versions") or None
    common = dict(common, kernel_sha=result.get("kernel_sha"), suite=result.get("suite"),
                  geomean_vs_original=_finite(overall.get("original")), geomean_vs_fa3=_finite(overall.get("fa3")),
                  all_correct=result.get("all_correct"), stop_met=result.get("stop_met"),
                  gpu=result.get("gpu") or None,
                  versions_json=json.dumps(versions, sort_keys=True) if versions else None)
    rows = []
    for r in result.get("rows") or []:
        scenario = r.get("scenario") or {}
        stats = r.get("stats") or {}
        refs = r.get("reference_stats") or {}
        median = _finite(stats.get("median_us"))

        def speedup(name):
            other = _finite((refs.get(name) or {}).get("median_us"))
            ok = r.get("status") == "passed" and median and other
            return other / median if ok else None

        flops = _scenario_flops(scenario)
        rows.append(dict(common, scenario=scenario.get("name"), category=scenario.get("category"),
                         status=r.get("status"), reason=r.get("reason") or None, detail=r.get("detail") or None,
                         rel_l2_err=_finite(r.get("rel_l2_err")), max_abs_err=_finite(r.get("max_abs_err")),
                         us_median=median, us_p10=_finite(stats.get("p10_us")), us_p90=_finite(stats.get("p90_us")),
                         n_reps=stats.get("n"), tflops=flops / (median * 1e-6) / 1e12 if flops and median else None,
                         timing_method=stats.get("method") or None, call_us_median=_finite(stats.get("call_us")),
                         speedup_vs_original=speedup("original"), speedup_vs_fa3=speedup("fa3"),
                         speedup_vs_fa4=speedup("fa4"), speedup_vs_cudnn=speedup("cudnn"),
                         speedup_vs_fa2=speedup("fa2"),
                         flags=",".join(list(r.get("flags") or []) + flags_suite) or None))
    if not rows:    # build failed, forbidden, crashed: one row says so
        rows.append(dict(common, status="failed", reason=result.get("status"),
                         detail=head(result.get("error") or None, 500), flags=",".join(flags_suite) or None))
    return rows


def attach_results(results, calls: dict, tally: ImportTally, session_id: str, error_line: int) -> list[dict]:
    """Join each tool output to its call (output head, error, end time, duration); count outputs with no call.
    results: (call_id, output, is_error, ts, source_file, source_line). error_line: which line of a failed
    output is its error message (Claude Code puts it first, Codex last). Returns the outputs' evaluation rows."""
    evaluations = []
    for call_id, output, is_error, ts, file, number in results:
        call = calls.get(call_id)
        if call is None:
            tally.orphan_results += 1
            continue
        duration = (ts - call["started_at"]).total_seconds() if ts and call["started_at"] else None
        call.update(output_text=head(output), is_error=is_error, ended_at=ts, duration_s=duration,
                    error=head(output.strip().splitlines()[error_line], 300) if is_error and output.strip() else None)
        evaluations += evaluation_rows(output, session_id=session_id, call_id=call_id, ts=ts,
                                       source_file=file, source_line=number)
    return evaluations


def evaluation_rows(text: str, *, session_id: str, call_id: str | None, ts, source_file: str,
                    source_line: int) -> list[dict]:
    """`evaluations` rows for every harness result printed in one tool output."""
    common = dict(session_id=session_id, call_id=call_id, ts=ts, source_file=source_file, source_line=source_line)
    rows = []
    results = find_suite_results(text)
    for k, result in enumerate(results):
        eval_id = result.get("eval_id") or f"{call_id or source_line}#{k}"
        rows += _suite_rows(result, dict(common, eval_id=eval_id))
    if results:
        return rows
    for k, run in enumerate(find_harness_lines(text)):
        correct = run.get("all_correct")
        rows.append(dict(common, eval_id=f"{call_id or source_line}#{k}",
                         kernel_sha=str(run["kernel_sha"]) if "kernel_sha" in run else None,
                         suite=str(run["suite"]) if "suite" in run else None,
                         status=None if not isinstance(correct, bool) else ("passed" if correct else "failed"),
                         geomean_vs_original=_finite(run.get("geomean_vs_original")),
                         geomean_vs_fa3=_finite(run.get("geomean_vs_fa3")),
                         all_correct=correct if isinstance(correct, bool) else None,
                         stop_met=run.get("stop_met") if isinstance(run.get("stop_met"), bool) else None))
    return rows


# ---- writing -----------------------------------------------------------------------------------------
def write_session(root: str | Path, imported: ImportedSession) -> dict:
    """Replace whatever the root held for this session with the imported rows; returns rows per table.

    The new copy is written beside the old one and swapped in (writer.replace_session), under a lock on the
    session id: a kill leaves the old or the new copy, and a parallel import of the same session is refused
    (LockHeld) instead of duplicating rows. The sessions row records how many rows each table got, so the
    report can tell a complete session from an interrupted one."""
    sid = imported.session_id
    tables = {t: rows for t, rows in imported.tables.items() if t != "sessions"}
    counts = {t: len(rows) for t, rows in tables.items() if rows}
    session = dict(imported.session)
    try:
        config = json.loads(session.get("config_json") or "{}")
    except ValueError:
        config = {}
    if isinstance(config, dict):
        config["rows_written"] = counts
        session["config_json"] = json.dumps(config)
    written = replace_session(root, sid, {"sessions": [session], **tables})
    return {"sessions": 1, **{t: written.get(t, 0) for t in tables}}
