"""Harness runs found in tool output, in every shape a transcript holds them.

A transcript keeps only what the agent saw, so a harness run is whatever the tool output printed. Three shapes,
most trusted first:
  * the **result line** `workbench-result: {json}` that `workbench check` prints last (harness/result_line.py);
  * the **SuiteResult JSON** of `workbench check --json FILE`, read back with cat, jq, `python -m json.tool` or
    Claude Code's Read (whose `     1→` line numbers are stripped; a line Read cut at 2000 characters does not
    parse and is skipped); alone or among log lines, on one line or pretty-printed: per-scenario rows;
  * **`key: value` text**: the human summary of `workbench check` from before the result line existed
    (`kernel: k.cu (sha 1a2b3c4d5e6f)`, `suite: dev26  gpu: ...`, `scenarios: 3 passed, 5 failed`,
    `geomean_vs_fa3: 0.755   (A 0.748, B 0.762, …)`, `all_correct: false`, `stop: '...' -> met`, `error: ...`),
    or a person's own script (`geomean_vs_fa3=0.73`, `kernel_sha: abc`). Text after a value is ignored. A key seen
    again, or a `kernel:` line, starts the next run. A block is a run when it has a geomean or `all_correct`, or
    the check's own `kernel:` + `suite:` + `scenarios:` lines (a failed build prints no figures, only `error:`).
Each sighting becomes evaluation rows: per scenario from the JSON, else one suite-level row (`scenario` null) with
the status: passed / failed (verification failed, build failed, forbidden, crashed — `reason` says which) /
static_only (built, but no GPU to verify on).
Sightings of one run are merged into one row set by run_identity.py.
"""
from __future__ import annotations

import json
import re

from workbench.harness.result_line import find_result_lines
from workbench.traces.importers.run_identity import RunMerger, Sighting, absorb, same_run
from workbench.traces.rows import clip, finite, scenario_columns, scenario_from_json, unjudged_columns
from workbench.traces.importers.values import count, text, text_id

DETAIL_CHARS = 500

_KEY_VALUE = (r"(geomean_vs_[a-z0-9]+|all_correct|stop_met|kernel_sha|suite|kernel|scenarios|stop|error)"
              r"[ \t]*[:=][ \t]*(.*?)[ \t]*$")
KEY_LINE = re.compile(r"^[ \t]*" + _KEY_VALUE, re.M | re.I)
# KEY_LINE at a line break, for the same matches one character later (the first line is tried on its own): a
# search for `^` tries every position of a text, one for a literal first character jumps from line to line. The
# indentation is taken whole (`*+`): a key starts with a letter, so giving some of it back never makes a match.
KEY_LINE_AFTER_BREAK = re.compile(r"\n[ \t]*+" + _KEY_VALUE, re.M | re.I)
TOKEN = re.compile(r"[^\s,;()]+")
KERNEL_VALUE = re.compile(r"^(.+?) \(sha ([^)\s]+)\)")
SUITE_GPU = re.compile(r"\bgpu: (.+?)(?:\s{2,}wall_s:|\s*$)")
STOP_VALUE = re.compile(r"->\s*(met|not met)\s*$")
COUNT = re.compile(r"(\d+) (passed|failed|unsupported|skipped|static_only)")
FAIL_ROW = re.compile(r"^\S+\s+FAIL (\w+)", re.M)
JSON_START = re.compile(r"(?m)^[ \t]*\{")
READ_LINE_NUMBER = re.compile(r"(?m)^ *\d+→")
DETAIL = {"text": 1, "result_line": 2, "json": 2}     # per-scenario JSON: 3
_DECODER = json.JSONDecoder()           # holds no state between calls: one for every output read


# ---- small parsers ---------------------------------------------------------------------------------
def _decimals(token: str) -> int:
    return len(token.split(".", 1)[1]) if "." in token else 0


def _row_status(status: str | None, all_correct) -> tuple[str | None, str | None]:
    """(evaluations.status, reason) of a suite-level row from the suite status and all_correct."""
    if status in (None, "evaluated"):
        if all_correct is None:
            return None, None
        return ("passed", None) if all_correct else ("failed", None)
    if status == "static_only":
        return "static_only", None
    return "failed", status             # build_failed | forbidden | crashed | error


def _suite_row(s: Sighting, all_correct, stop_met, **extra) -> dict:
    status, reason = _row_status(s.status, all_correct)
    return dict(kernel_sha=s.kernel_sha, suite=s.suite, scenario=None, status=status,
                reason=extra.pop("reason", None) or reason,
                geomean_vs_original=s.geomeans.get("original"), geomean_vs_fa3=s.geomeans.get("fa3"),
                all_correct=all_correct if isinstance(all_correct, bool) else None,
                stop_met=stop_met if isinstance(stop_met, bool) else None, **extra)


# ---- what a printed result may hold ---------------------------------------------------------------------
def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _strings(value) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _well_typed(obj: dict) -> dict:
    """A result line's or SuiteResult's fields, each of the type the sightings read (another type: absent).
    The object was printed into tool output, so anything can be in it: an agent's own JSON, a hand edit."""
    out = dict(obj)
    for key in ("eval_id", "kernel_sha", "suite", "status", "gpu"):
        out[key] = text_id(obj.get(key))
    out["error"] = text(obj.get("error"))
    out["geomeans"] = {"overall": {str(k): v for k, v in _dict(_dict(obj.get("geomeans")).get("overall")).items()}}
    out["counts"] = {k: v for k, v in _dict(obj.get("counts")).items()
                     if isinstance(v, int) and not isinstance(v, bool)}
    out["failures"] = [{k: text_id(v) for k, v in f.items()}
                       for f in _list(obj.get("failures")) if isinstance(f, dict)]
    out["flags"] = _strings(obj.get("flags"))
    out["versions"] = _dict(obj.get("versions")) or None
    rows = []
    for r in _list(obj.get("rows")):
        if isinstance(r, dict):
            scenario = {k: (text_id(v) if k in ("name", "category") else v)
                        for k, v in _dict(r.get("scenario")).items()}
            rows.append(dict(r, scenario=scenario, stats=_dict(r.get("stats")), flags=_strings(r.get("flags")),
                             reference_stats={k: _dict(v) for k, v in _dict(r.get("reference_stats")).items()},
                             status=text_id(r.get("status")), reason=text(r.get("reason")),
                             detail=text(r.get("detail"))))
    out["rows"] = rows
    return out


# ---- the result line ---------------------------------------------------------------------------------
def _from_result_line(pos: int, obj: dict) -> Sighting:
    overall = (obj.get("geomeans") or {}).get("overall") or {}
    s = Sighting("result_line", pos, [], eval_id=obj.get("eval_id") or None, kernel_sha=obj.get("kernel_sha"),
                 suite=obj.get("suite"), status=obj.get("status"),
                 geomeans={k: finite(v) for k, v in overall.items()}, detail=DETAIL["result_line"])
    failures = [f for f in obj.get("failures") or [] if isinstance(f, dict)]
    counts = obj.get("counts") or {}
    reasons = sorted({str(f.get("reason")) for f in failures if f.get("reason")})
    detail = obj.get("error") or None
    if failures:
        detail = (f"{counts.get('failed', len(failures))} of {sum(v for v in counts.values() if isinstance(v, int))}"
                  " scenarios failed: " + ", ".join(f"{f.get('scenario')} {f.get('reason')}" for f in failures))
    s.rows = [_suite_row(s, obj.get("all_correct"), obj.get("stop_met"), reason=",".join(reasons) or None,
                         detail=clip(detail), gpu=obj.get("gpu") or None,
                         suite_flags=",".join(obj.get("flags") or []) or None)]
    return s


# ---- SuiteResult JSON -----------------------------------------------------------------------------
def _is_suite_result(obj) -> bool:
    return isinstance(obj, dict) and "suite" in obj and "kernel_sha" in obj and ("rows" in obj or "geomeans" in obj)


def find_suite_results(text: str) -> list[tuple[int, dict]]:
    """(offset, object) of every SuiteResult JSON object in text that starts a line."""
    if not text or '"kernel_sha"' not in text:
        return []
    if "→" in text:
        text = READ_LINE_NUMBER.sub("", text)
    found, decoder, end_of_last = [], _DECODER, 0
    for match in JSON_START.finditer(text):
        start = match.end() - 1
        if start < end_of_last:
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if _is_suite_result(obj):
            found.append((start, obj))
            end_of_last = end
    return found


def _from_suite_result(pos: int, result: dict) -> Sighting:
    overall = (result.get("geomeans") or {}).get("overall") or {}
    s = Sighting("json", pos, [], eval_id=result.get("eval_id") or None, kernel_sha=result.get("kernel_sha"),
                 suite=result.get("suite"), status=result.get("status"),
                 geomeans={k: finite(v) for k, v in overall.items()}, detail=DETAIL["json"])
    suite_flags = list(result.get("flags") or [])
    versions = result.get("versions") or None
    common = dict(kernel_sha=s.kernel_sha, suite=s.suite, geomean_vs_original=s.geomeans.get("original"),
                  geomean_vs_fa3=s.geomeans.get("fa3"), all_correct=result.get("all_correct"),
                  stop_met=result.get("stop_met"), gpu=result.get("gpu") or None,
                  suite_flags=",".join(suite_flags) or None,
                  versions_json=json.dumps(versions, sort_keys=True) if versions else None)
    for r in result.get("rows") or []:
        if isinstance(r, dict):
            s.rows.append(dict(common, **scenario_columns(scenario_from_json(r))))
    if s.rows:
        s.detail = 3
    else:       # build failed, forbidden, crashed: one row says so
        s.rows.append(dict(common, **unjudged_columns(s.status or "error", result.get("error"))))
    return s


# ---- key: value text ---------------------------------------------------------------------------------
def _value(key: str, raw: str):
    """The parsed value of one `key: value` line, or None when the line is not a harness line after all."""
    token = TOKEN.match(raw)
    if key.startswith("geomean_vs_"):
        if not token:
            return None
        text = token.group(0)
        if text in ("-", "nan", "NaN"):
            return ("-", None)
        number = finite(text)
        return None if number is None else (text, number)
    if key in ("all_correct", "stop_met"):
        word = token.group(0).lower() if token else ""
        return (word == "true") if word in ("true", "false") else None
    if key == "suite":              # `suite: dev26  gpu: NVIDIA H200  wall_s: 5.5` from workbench check
        gpu = SUITE_GPU.search(raw)
        return (token.group(0), gpu.group(1) if gpu and gpu.group(1) != "-" else None) if token else None
    if key == "kernel_sha":
        return token.group(0) if token else None
    if key == "kernel":
        match = KERNEL_VALUE.match(raw)
        return (match.group(1), match.group(2)) if match else None
    if key == "scenarios":
        return {name: int(n) for n, name in COUNT.findall(raw)}
    if key == "stop":
        match = STOP_VALUE.search(raw)
        return (match.group(1) == "met") if match else None
    return raw or None          # error


def _key_lines(text: str) -> list[tuple[int, str, str]]:
    """(offset, key, value text) of every KEY_LINE match in text, in order (KEY_LINE.finditer's matches)."""
    first = KEY_LINE.match(text)
    found = [(first.start(), first.group(1), first.group(2))] if first else []
    return found + [(m.start() + 1, m.group(1), m.group(2)) for m in KEY_LINE_AFTER_BREAK.finditer(text)]


def find_harness_lines(text: str) -> list[dict]:
    """`key: value` runs in text: [{key: value, ..., "_pos": offset}], keys as `_value` parses them."""
    runs, current = [], {}
    for start, key, raw in _key_lines(text or ""):
        key = key.lower()
        value = _value(key, raw)
        if value is None:
            continue
        if key in current or (key == "kernel" and current):
            runs.append(current)
            current = {}
        current.setdefault("_pos", start)
        current[key] = value
    if current:
        runs.append(current)
    return [r for r in runs if any(k.startswith("geomean_vs_") for k in r) or "all_correct" in r
            or {"kernel", "suite", "scenarios"} <= set(r)]


def _text_status(run: dict) -> str | None:
    counts = run.get("scenarios") or {}
    has_figures = any(k.startswith("geomean_vs_") for k in run) or "all_correct" in run
    if counts.get("static_only") and not (counts.get("passed") or counts.get("failed")):
        return "static_only"
    if has_figures:
        return "evaluated"
    if "kernel" not in run:
        return None
    error = (run.get("error") or "").lower()
    if "build failed" in error or "does not build" in error:
        return "build_failed"
    return "forbidden" if "forbidden" in error else ("crashed" if "crash" in error else "error")


def _from_text(run: dict, fail_reasons: list[str]) -> Sighting:
    geomeans, decimals = {}, []
    for key, value in run.items():
        if key.startswith("geomean_vs_"):
            printed, number = value
            geomeans[key[len("geomean_vs_"):]] = number
            if number is not None:
                decimals.append(_decimals(printed))
    sha = run["kernel"][1] if "kernel" in run else run.get("kernel_sha")
    s = Sighting("text", run["_pos"], [], kernel_sha=str(sha) if sha is not None else None,
                 suite=run["suite"][0] if "suite" in run else None, status=_text_status(run), geomeans=geomeans,
                 decimals=min(decimals) if decimals else None, detail=DETAIL["text"])
    all_correct = run.get("all_correct")
    stop_met = run.get("stop_met", run.get("stop"))
    reason = ",".join(sorted(set(fail_reasons))) if all_correct is False and fail_reasons else None
    counts = run.get("scenarios") or {}
    detail = run.get("error") if "kernel" in run else None
    if all_correct is False and counts.get("failed"):
        detail = f"{counts['failed']} of {sum(counts.values())} scenarios failed"
    s.rows = [_suite_row(s, all_correct, stop_met, reason=reason, detail=clip(detail),
                         gpu=run["suite"][1] if "suite" in run else None)]
    return s


# ---- one tool output -----------------------------------------------------------------------------------
def find_sightings(text: str) -> list[Sighting]:
    """Every harness run printed in one tool output, in order; shapes of one run in it are merged."""
    if not text:
        return []
    found = [_from_result_line(pos, _well_typed(obj)) for pos, obj in find_result_lines(text)]
    found += [_from_suite_result(pos, _well_typed(obj)) for pos, obj in find_suite_results(text)]
    fails = [(m.start(), m.group(1)) for m in FAIL_ROW.finditer(text)] if "FAIL " in text else []   # its literal
    last = 0
    for run in find_harness_lines(text):
        reasons = [r for pos, r in fails if last <= pos < run["_pos"]]
        last = run["_pos"]
        found.append(_from_text(run, reasons))
    found.sort(key=lambda s: s.pos)
    merged: list[Sighting] = []
    for s in found:
        twin = next((m for m in merged if (m.form != s.form and same_run(m, s))
                     or (m.eval_id is not None and m.eval_id == s.eval_id)), None)
        if twin is None:
            merged.append(s)
        elif s.detail > twin.detail:
            merged[merged.index(twin)] = absorb(s, twin)
        else:
            absorb(twin, s)
    return merged


def evaluation_rows(text: str, *, session_id: str, call_id: str | None, ts, source_file: str,
                    source_line: int) -> list[dict]:
    """`evaluations` rows for every harness run printed in one tool output."""
    merger = RunMerger()
    merger.add(find_sightings(text), call_id=call_id, ts=ts, source_file=source_file, source_line=source_line)
    return merger.rows(session_id)
