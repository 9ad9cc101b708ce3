"""What the caller accepts from an evaluation worker's result stream, and how long it waits for it.

The candidate's native code runs in the worker's process and can write to the worker's result pipe, so every
line there is untrusted input. `Protocol.accept(line)` returns a well-formed event of the protocol (worker.py's
start, begin, result, fatal, done, in that order, each with exactly its fields and their types, a result only for
the scenario just begun) or raises `MalformedEvent` with one line; the caller then stops the worker. No event can
raise anything else in the caller, or change what it believes about a scenario other than the current one.

`Deadline`: the caller's wait is bounded whatever the worker writes. Until `start`, the worker has the start-up
time. From `start` on there is an overall deadline, fixed then and never moved again: the library load and every
scenario at its time limit, plus a grace to exit. Within it, each scenario has its own limit from its `begin`;
a `begin` never extends the overall deadline, so a stream of forged events cannot keep the caller waiting.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Union, get_args, get_origin, get_type_hints

from workbench.harness.result import ScenarioResult, Stats

LINE_CAP = 16 << 20                 # a result line is a few KiB; longer is not the worker's
MAX_DEPTH = 32                      # an event nests 3-4 deep; deeper is refused before json parses it
EXIT_GRACE_S = 30.0                 # from `done` (or the overall deadline's end) to the worker's exit
STATUSES = {"passed", "failed", "unsupported", "skipped", "static_only"}
FIELDS = {                          # event -> {field: the type(s) its value must have}
    "start": {"gpu": str, "versions": dict, "missing_anchors": dict, "fresh_seed": int, "notices": list,
              "foreign_check": str},
    "begin": {"scenario": str},
    "result": {"result": dict},
    "fatal": {"reason": str, "detail": str},
    "done": {"gpu": str, "versions": dict, "foreign_check_s": (int, float), "foreign_calls": int},
    "cached": {},                   # a baseline/anchor timing staged: the parent merges it now (progress_cache.py)
}
OPTIONAL = {                        # event -> {field: type} a worker may add
    "result": {"spent": dict,       # seconds each baseline or anchor timed afresh took (the parent's ETA)
               "rows_s": dict},     # seconds of the baseline's first call made for its output rows alone
}


class MalformedEvent(ValueError):
    """One line: what was wrong with what the worker wrote."""


def _conforms(value, hint) -> bool:
    if get_origin(hint) is Union:
        return any(_conforms(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(value, bool) and hint is not bool:
        return False
    if hint is float:
        return isinstance(value, (int, float))
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict) and not _field_problem(value, hint)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _field_problem(data: dict, cls) -> str:
    """'' when `data` has only fields of the dataclass `cls`, all required ones, each of its declared type."""
    hints = get_type_hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        return f"unknown field {unknown[0]!r} in {cls.__name__}"
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if f.name not in data:
            if required:
                return f"missing field {f.name!r} in {cls.__name__}"
            continue
        nested = [h for h in (hints[f.name], *get_args(hints[f.name])) if dataclasses.is_dataclass(h)]
        if nested and isinstance(data[f.name], dict):
            problem = _field_problem(data[f.name], nested[0])     # say what is wrong inside, not just "a dict"
            if problem:
                return problem
        elif not _conforms(data[f.name], hints[f.name]):
            return f"field {f.name!r} of {cls.__name__} is a {type(data[f.name]).__name__}"
    return ""


def _check_result(data: dict) -> str:
    problem = _field_problem(data, ScenarioResult)
    if problem:
        return problem
    if data.get("resumed_from"):        # only the parent marks a row as its record's (resume_rows.py)
        return "resumed_from is the parent's to set"
    if data["status"] not in STATUSES:
        return f"status {str(data['status'])[:40]!r} is not one of {', '.join(sorted(STATUSES))}"
    for name, stats in data.get("reference_stats", {}).items():
        if not isinstance(name, str) or not _conforms(stats, Stats):
            return f"reference_stats[{str(name)[:40]!r}] is not timing statistics"
    if not all(isinstance(k, str) and isinstance(v, (int, float, str, type(None))) and not isinstance(v, bool)
               for k, v in data.get("reference_errors", {}).items()):
        return "reference_errors holds something other than numbers and notes"
    if not all(isinstance(flag, str) for flag in data.get("flags", [])):
        return "flags holds something other than text"
    return ""


def _nesting_depth(line: str) -> int:
    """The deepest [ / { nesting of a JSON line, brackets inside strings not counted. Checked before parsing
    because whether json.loads fails on deep nesting depends on the Python (3.11: RecursionError; 3.12 parsed
    5000 levels on the GPU machine), and the one-line error must not."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


class Protocol:
    """The order and shape of the events of one worker run over `scenario_dicts` (Scenario.to_dict() each)."""

    def __init__(self, scenario_dicts: list):
        self.scenarios = list(scenario_dicts)
        self.started = self.finished = False
        self.begun = 0                  # scenarios begun so far
        self.current: str | None = None

    def accept(self, line: str) -> dict:
        if len(line) > LINE_CAP:
            raise MalformedEvent(f"a line of {len(line)} characters")
        # the scan only for lines with many brackets: a result event has a handful
        if line.count("[") + line.count("{") > MAX_DEPTH and _nesting_depth(line) > MAX_DEPTH:
            raise MalformedEvent(f"not JSON: nested deeper than {MAX_DEPTH} levels")
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            raise MalformedEvent(f"not JSON: {line[:60]!r}") from None
        if not isinstance(event, dict) or event.get("event") not in FIELDS:
            kind = event.get("event") if isinstance(event, dict) else type(event).__name__
            raise MalformedEvent(f"unknown event {str(kind)[:40]!r}")
        kind = event["event"]
        fields = {k: v for k, v in event.items() if k != "event"}
        expected, optional = FIELDS[kind], OPTIONAL.get(kind, {})
        unknown = sorted(set(fields) - set(expected) - set(optional))
        missing = sorted(set(expected) - set(fields))
        if unknown or missing:
            what = f"unknown field {unknown[0]!r}" if unknown else f"missing field {missing[0]!r}"
            raise MalformedEvent(f"{kind}: {what}")
        typed = {**expected, **{k: t for k, t in optional.items() if k in fields}}
        wrong = [k for k, t in typed.items() if not isinstance(fields[k], t) or isinstance(fields[k], bool)]
        for name in ("spent", "rows_s"):
            if not wrong and name in fields and not all(isinstance(k, str) and isinstance(v, (int, float))
                                                        and not isinstance(v, bool) for k, v in fields[name].items()):
                wrong = [name]
        if wrong:
            raise MalformedEvent(f"{kind}: field {wrong[0]!r} is a {type(fields[wrong[0]]).__name__}")
        getattr(self, f"_{kind}")(fields)
        return event

    def _order(self, kind: str, ok: bool, why: str) -> None:
        if not ok or self.finished:
            raise MalformedEvent(f"{kind} {'after done' if self.finished else why}")

    def _start(self, fields: dict) -> None:
        self._order("start", not self.started, "twice")
        notes = [*fields["notices"], *fields["missing_anchors"].keys(), *fields["missing_anchors"].values()]
        if not all(isinstance(x, str) for x in notes):
            raise MalformedEvent("start: notices or missing_anchors hold something other than text")
        self.started = True

    def exclude(self, names) -> None:
        """The parent's own: these scenarios were judged by an interrupted run; the worker skips them (before any
        scenario has begun)."""
        if self.begun:
            raise ValueError("scenarios can only be excluded before the first begins")
        self.scenarios = [s for s in self.scenarios if s["name"] not in set(names)]

    def _begin(self, fields: dict) -> None:
        expected = self.scenarios[self.begun]["name"] if self.begun < len(self.scenarios) else None
        self._order("begin", self.started and self.current is None and fields["scenario"] == expected,
                    f"of {fields['scenario'][:60]!r} (expected {expected!r})")
        self.current, self.begun = fields["scenario"], self.begun + 1

    def _result(self, fields: dict) -> None:
        data = fields["result"]
        self._order("result", self.current is not None, "with no scenario begun")
        problem = _check_result(data)
        if not problem and data["scenario"].get("name") != self.current:
            problem = f"a result for {str(data['scenario'].get('name'))[:60]!r} while {self.current!r} runs"
        if problem:
            raise MalformedEvent(f"result: {problem}")
        fields["result"] = dict(data, scenario=self.scenarios[self.begun - 1])     # the job's own scenario

    def _cached(self, fields: dict) -> None:
        self._order("cached", self.started, "before start")

    def _fatal(self, fields: dict) -> None:
        self._order("fatal", self.started, "before start")

    def _done(self, fields: dict) -> None:
        self._order("done", self.started and self.current is None, "while a scenario runs")
        self.finished = True

    def row(self, event: dict) -> ScenarioResult:
        """The ScenarioResult of an accepted result event (the current scenario's), ending that scenario."""
        self.current = None
        return ScenarioResult.from_dict(event["result"])


class Deadline:
    """When the caller stops waiting (see the module doc); times are time.monotonic()."""

    def __init__(self, start_s: float, scenario_s: float, scenarios: int):
        self.scenario_s, self.scenarios = scenario_s, scenarios
        self.overall: float | None = None
        self.current = time.monotonic() + start_s
        self.phase = "start"

    def started(self) -> None:
        if self.overall is None:
            now = time.monotonic()
            self.overall = now + (self.scenarios + 1) * self.scenario_s + EXIT_GRACE_S
            self.current, self.phase = min(now + self.scenario_s, self.overall), "load"

    def begin(self) -> None:
        self.current, self.phase = min(time.monotonic() + self.scenario_s, self.overall), "scenario"

    def done(self) -> None:
        self.current, self.phase = min(time.monotonic() + EXIT_GRACE_S, self.overall), "exit"

    def remaining(self) -> float:
        return self.current - time.monotonic()

    def why(self, start_s: float) -> str:
        """One line: which limit ran out."""
        if self.phase == "start":
            return f"the worker did not start within {start_s:.0f} s"
        if self.overall is not None and self.current >= self.overall:
            return (f"the evaluation ran past its overall limit ({self.scenarios} scenario(s) and the library load at "
                    f"{self.scenario_s:.0f} s each)")
        return {"load": f"loading the kernel library took more than {self.scenario_s:.0f} s",
                "scenario": f"no progress for {self.scenario_s:.0f} s",
                "exit": f"the worker did not exit within {EXIT_GRACE_S:.0f} s of finishing"}[self.phase]
