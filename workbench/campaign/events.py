"""Plain event objects a campaign emits, and the bus that hands them to subscribers.

The campaign loop never writes traces or touches a widget itself: it publishes these events and the trace
recorder, the CLI log and the notebook UI subscribe. Subscribers are called synchronously on the campaign's
thread, in subscription order, so a UI subscriber must only enqueue (never draw) in its callback.

Every event is a dataclass with a `kind` (its snake_case name) and `ts` (UTC epoch seconds); `to_dict()` gives
a JSON-ready dict. Text streamed by `MessageDelta` is provisional: `MessageDone` carries the final content and
a UI should replace what it streamed with it (a retried request can re-stream a block).
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from workbench.campaign.main_anchor import LEGACY_MAIN

log = logging.getLogger(__name__)

# Why a campaign (or an evolution run) stopped, in words, for logs, the notebook and the report.
STOP_REASONS = {
    "stop_condition_met": "the stop condition holds", "stopped_by_user": "stopped by you",
    "agent_finished": "the agent has no more turns", "backend_error": "the agent backend failed",
    "internal_error": "a workbench error ended it", "interrupted": "interrupted",
    "budget_turns": "the turn budget is spent", "budget_tool_calls": "the tool-call budget is spent",
    "budget_tokens": "the token budget is spent", "budget_usd": "the cost budget is spent",
    "budget_wall_time": "the time budget is spent",
    "budget_idle_turns": "the agent went several turns without a tool call",
    "budget_evaluations": "the evaluation budget is spent", "generations_done": "the last generation is done",
    "seed_not_correct": "the seed kernel is not correct", "exhausted": "every mutation was rejected",
    "stopped_watching": "you stopped watching (the outside agent may go on)",
}


@dataclass
class Usage:
    """Token usage of one API message (zeros for agents without an LLM)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass
class Event:
    def __post_init__(self):
        if not getattr(self, "ts", None):
            self.ts = time.time()

    @property
    def kind(self) -> str:
        name = type(self).__name__
        return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")

    def to_dict(self) -> dict:
        data = {"kind": self.kind}
        for key, value in self.__dict__.items():
            data[key] = value.to_dict() if hasattr(value, "to_dict") else value
        return data


@dataclass
class CampaignStarted(Event):
    campaign_id: str
    mode: str
    agent: str
    model: str
    kernel_path: str
    suite: str
    stop_expr: str
    workspace: str
    resumed: bool = False
    turn: int = 0                       # turns already committed (resume)
    main_anchor: str = LEGACY_MAIN      # the problem's main anchor: what the status line scores on
    ts: float = 0.0


@dataclass
class TurnStarted(Event):
    turn: int
    ts: float = 0.0


@dataclass
class MessageDelta(Event):
    """A piece of assistant text as it streams in (provisional, see module doc)."""
    turn: int
    block_index: int
    text: str
    ts: float = 0.0


@dataclass
class MessageDone(Event):
    """One whole message of the conversation, in Messages-API form (`content` is a list of blocks)."""
    turn: int
    message_id: str
    parent_id: str
    role: str                           # assistant | user
    content: list
    model: str = ""
    usage: Optional[Usage] = None       # assistant messages only
    cost_usd: Optional[float] = None
    stop_reason: str = ""
    human_block: Optional[int] = None   # index of a block a person typed (user messages)
    ts: float = 0.0


@dataclass
class ToolCallStarted(Event):
    turn: int
    call_id: str
    tool_index: int                     # running count of tool calls in the campaign, from 1
    name: str
    input: dict
    ts: float = 0.0


@dataclass
class ToolCallFinished(Event):
    turn: int
    call_id: str
    tool_index: int
    name: str
    input: dict
    output: str
    is_error: bool
    started_at: float
    duration_s: float
    ts: float = 0.0


@dataclass
class EvaluationDone(Event):
    """A harness run finished. `result` is the harness's SuiteResult (`result.to_frame()` for tables)."""
    turn: int
    call_id: str
    tool_index: int
    eval_id: str
    kernel_sha: str
    result: Any
    geomean_vs_original: float
    geomean_vs_fa3: float
    best_vs_original: Optional[float]   # best so far, after this run
    best_vs_fa3: Optional[float]
    is_new_best: bool
    main_anchor: str = LEGACY_MAIN      # the problem's main anchor (attention: fa3; the GEMM: cublas)
    geomean_vs_main: Optional[float] = None
    best_vs_main: Optional[float] = None    # the main-anchor figure of the best run so far
    ts: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        _fill_main(self, geomean_vs_main="geomean_vs_fa3", best_vs_main="best_vs_fa3")

    def to_dict(self) -> dict:
        data = super().to_dict()
        data["result"] = self.result.to_dict() if hasattr(self.result, "to_dict") else self.result
        return data


@dataclass
class TriggerDetected(Event):
    """A trigger held at a turn boundary (emitted even when the mode asks nothing, e.g. tools_only)."""
    turn: int
    trigger: str                        # stall | claim | suspicious
    reason: str
    ts: float = 0.0


@dataclass
class InterventionFired(Event):
    """A question was put to the agent; it is the last block of the user message of `turn`."""
    turn: int
    tool_index: int
    intervention_id: str
    trigger: str                        # stall | claim | suspicious | human
    source: str                         # human | bank
    question_id: str
    text: str
    layer: str
    reason: str
    best_before: Optional[float]        # best geomean vs original before the question
    ts: float = 0.0


@dataclass
class TurnCommitted(Event):
    """Everything of `turn` has been emitted; the recorder writes the turn's rows now."""
    turn: int
    tool_index: int
    tokens: int
    cost_usd: float
    ts: float = 0.0


@dataclass
class Notice(Event):
    level: str                          # info | warning | error
    text: str
    ts: float = 0.0


@dataclass
class CampaignStopped(Event):
    reason: str                         # stop_condition_met | budget_* | stopped_by_user | backend_error | ...
    detail: str
    turn: int
    tool_calls: int
    best_sha: str
    best_vs_original: Optional[float]
    best_vs_fa3: Optional[float]
    tokens: int
    cost_usd: float
    wall_s: float
    main_anchor: str = LEGACY_MAIN
    best_vs_main: Optional[float] = None
    ts: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        _fill_main(self, best_vs_main="best_vs_fa3")


def _fill_main(event, **main_to_fa3) -> None:
    """An attention event made by a caller that names no main-anchor figure (an older one) gets FA3's."""
    if event.main_anchor == LEGACY_MAIN:
        for main, fa3 in main_to_fa3.items():
            if getattr(event, main) is None:
                setattr(event, main, getattr(event, fa3))


Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous publish/subscribe. A failing ordinary subscriber is logged and skipped; a failing
    `critical` one (the trace recorder) raises, because a campaign must not run on without its record."""

    def __init__(self):
        self._lock = threading.Lock()
        self._subscribers: list[tuple[Subscriber, bool]] = []

    def subscribe(self, fn: Subscriber, critical: bool = False) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append((fn, critical))

        def unsubscribe():
            with self._lock:
                self._subscribers[:] = [(f, c) for f, c in self._subscribers if f is not fn]
        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn, critical in subscribers:
            try:
                fn(event)
            except Exception:
                if critical:
                    raise
                log.exception("event subscriber %r failed on %s", fn, event.kind)


class EventLog:
    """A subscriber that keeps every event (tests, and a UI that wants the history)."""

    def __init__(self):
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, cls) -> list:
        return [e for e in self.events if isinstance(e, cls)]
