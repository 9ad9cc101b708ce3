"""The intervention policy: when to put a question to the agent, and which one.

Checked at every turn boundary, after the turn's tool results are in (`question_at_boundary`: the one decision
the built-in loop and an external agent's campaign, campaign_service.py, both make):
  * suspicious: a new best that jumps more than 1.5x over the previous best, a harness suspicion flag, or
    TFLOP/s near the measured ceiling on a shape where the candidate beats every anchor (harness/flags.py;
    evaluated on the runs of this turn);
  * claim: the agent says it is done, optimal or at a hardware limit, or ends its turn while the stop
    condition does not hold (rule-based, `detect_claim`), or states a claim outright (an external agent's
    `claim` argument); saying "done" never ends a campaign;
  * stall: no new best geomean after `stall_runs` harness runs or `stall_calls` tool calls.
Precedence is suspicious > claim > stall (a jump to check outranks a plateau).

The question comes from the person if one waits in the inbox (modes human, hybrid), else from the bank
(modes bank, hybrid): matching trigger or "any", never the same question twice in a row, preferring a
question not asked yet and a layer not visited recently. tools_only never asks anything (the baseline arm).
"""
from __future__ import annotations

import random
import threading
import re
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from workbench.harness.flags import faster_than_best_anchor
from workbench.questions.bank import Question

MODES = ("tools_only", "bank", "human", "hybrid")
BENIGN_FLAGS = {"noisy", "not_graph_capturable", "clock_apart"}   # timing remarks, not suspicions ("noisy:3")


@dataclass
class PolicyConfig:
    stall_runs: int = 3                 # harness runs without a new best ...
    stall_calls: int = 12               # ... or tool calls without a new best
    jump_ratio: float = 1.5             # new best / previous best above this is suspicious
    ceiling_tflops: float = 790.0       # measured bf16 dense ceiling (problem.toml [ceilings])
    near_ceiling_fraction: float = 0.9
    # a new best must beat the best so far by more than this factor: the same kernel timed eleven times on the
    # H200 gave x1.052 to x1.064 (campaign c-offline-1, a 1.1 % spread), so smaller "gains" are timing noise and
    # must neither reset the stall count nor be credited to a question
    min_gain: float = 1.02
    recent_layers: int = 3              # layers of the last N questions are avoided when possible


@dataclass
class Inquiry:
    """A question decided at a turn boundary (becomes an InterventionFired event and a trace row)."""
    trigger: str                        # stall | claim | suspicious | human
    source: str                         # human | bank
    text: str
    question_id: str = ""
    layer: str = ""
    reason: str = ""


# ---- claim detection (rule-based) -----------------------------------------------------------------------
_NEGATION = re.compile(r"\b(not|n't|never|far from|no longer|nowhere|yet to|until|before|if|whether|once)\b"
                       r"[\w\s,'-]{0,24}$", re.I)
CLAIM_PATTERNS = [
    ("done", re.compile(r"\b(i am|i'm|we are|we're|i have|i've|this is|that's|it is|it's|now|all)\s+"
                        r"(done|finished|complete|wrapped up)\b", re.I)),
    ("done", re.compile(r"\b(optimi[sz]ation|work|task|campaign|kernel|job)\s+(is\s+)?(now\s+)?"
                        r"(complete|completed|finished|done)\b", re.I)),
    ("done", re.compile(r"\b(i('ll| will) stop here|nothing (more|else) to (do|gain|try)|final version)\b", re.I)),
    ("optimal", re.compile(r"\b(optimal|fully optimi[sz]ed|as fast as (it|this|the kernel) (can|will) (get|go|be)"
                           r"|can(not|'t) be (made\s+)?(any\s+)?faster|no further (improvement|gain|speedup|"
                           r"optimi[sz]ation)s? (is |are )?(possible|available|left)|diminishing returns)\b", re.I)),
    ("limit", re.compile(r"\b(at|near|reached|reaching|hit|hitting|approaching|against)\s+(the\s+)?"
                         r"((hardware|bandwidth|memory|compute|theoretical|physical|practical|roofline|peak)[\s-]*)+"
                         r"(limit|limits|ceiling|peak|bound|roofline)\b", re.I)),
    ("limit", re.compile(r"\b(this|that) is the (limit|ceiling|best (we|i|it) can (do|get))\b", re.I)),
]


@dataclass
class Claim:
    kind: str                           # done | optimal | limit | end_turn
    phrase: str


def detect_claim(text: str) -> Optional[Claim]:
    """The first un-negated claim of being done / optimal / at a limit in `text`, or None."""
    for kind, pattern in CLAIM_PATTERNS:
        for match in pattern.finditer(text or ""):
            sentence_start = max(text.rfind(".", 0, match.start()), text.rfind("\n", 0, match.start())) + 1
            before = text[sentence_start:match.start()]
            if _NEGATION.search(before) or re.match(r"\s*(not|yet)\b", text[match.end():match.end() + 6], re.I):
                continue
            return Claim(kind, match.group(0))
    return None


def _finite(value) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


# ---- the policy ----------------------------------------------------------------------------------------
@dataclass
class PolicyState:
    best: Optional[float] = None        # best geomean of an all-correct run, in best_metric's units
    best_metric: str = "original"       # what `best` is a geomean against: the campaign's main anchor, or the
                                        # original where a run has no figure for it (snapshots before this field)
    runs_since_best: int = 0
    calls_since_best: int = 0
    pending_suspicion: list = field(default_factory=list)   # reasons seen this turn
    asked: list = field(default_factory=list)               # question ids, in order
    layers: list = field(default_factory=list)              # layers of questions, in order


class Policy:
    def __init__(self, mode: str, bank: list[Question], config: PolicyConfig | None = None, seed: int = 0):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        self.mode, self.bank, self.config = mode, list(bank), config or PolicyConfig()
        self.state = PolicyState()
        self._rng = random.Random(seed)

    @property
    def takes_human_questions(self) -> bool:
        return self.mode in ("human", "hybrid")

    # ---- observations, fed by the loop as the turn runs ----------------------------------------------
    def on_tool_call(self) -> None:
        self.state.calls_since_best += 1

    def on_result(self, result, main: str = "", recorded: Optional[dict] = None) -> bool:
        """Record a harness run, scored when every scenario is correct (a run with a wrong scenario is never a
        best) by its geomean against the campaign's `main` anchor, the figure its stop condition reads, or
        against the original where the run has none. `recorded` maps a metric ("original" or an anchor) to the
        campaign's recorded best in it: when the metric changes (a snapshot from before this scoring, or a run
        without the anchor) the best is re-based on it, so one metric's figures are never compared with
        another's. Returns whether it is a new best."""
        variables = result.stop_variables() if result.rows and result.all_correct else {}
        metric = main if main and _finite(variables.get(f"geomean_vs_{main}")) else "original"
        if metric != self.state.best_metric:
            self.state.best = _finite((recorded or {}).get(metric))
            self.state.best_metric = metric
        score = _finite(variables.get(f"geomean_vs_{metric}"))
        return self.on_evaluation(result, score)

    def on_evaluation(self, result, score: Optional[float]) -> bool:
        """Record a harness run; `score` is its geomean in the state's best_metric (None unless all correct).
        Returns whether it is a new best."""
        st, cfg = self.state, self.config
        st.runs_since_best += 1
        flags = [f for f in (result.flags or []) if f.split(":")[0] not in BENIGN_FLAGS]
        if flags:
            st.pending_suspicion.append(f"harness flag(s): {', '.join(dict.fromkeys(flags))}")
        # the rows the harness's near_ceiling rule would count: faster than every anchor on their shape
        top = max((r.tflops for r in result.rows if r.tflops and r.status == "passed"
                   and faster_than_best_anchor(r)), default=0.0)
        if top >= cfg.near_ceiling_fraction * cfg.ceiling_tflops:
            st.pending_suspicion.append(f"{top:.0f} TFLOP/s is within {1 - cfg.near_ceiling_fraction:.0%} "
                                        f"of the measured ceiling ({cfg.ceiling_tflops:.0f})")
        if score is None or score != score or (st.best is not None and score <= cfg.min_gain * st.best):
            return False
        if st.best is not None and score > cfg.jump_ratio * st.best:
            st.pending_suspicion.append(f"new best x{score:.2f} jumps {score / st.best:.2f}x over the previous "
                                        f"best x{st.best:.2f}")
        st.best, st.runs_since_best, st.calls_since_best = score, 0, 0
        return True

    # ---- the decision at a turn boundary ------------------------------------------------------------
    def question_at_boundary(self, assistant_text: str, ended_turn: bool, stop_met: bool,
                             next_human: Callable[[], Optional[dict]] = lambda: None,
                             claimed: str = "") -> tuple[str, str, Optional[Inquiry]]:
        """(trigger, reason, question or None) at a turn boundary. `next_human()` pops the person's waiting
        question; it is only called when the mode takes one and the stop condition does not hold (a campaign
        that is done asks nothing and keeps the person's question)."""
        trigger, reason = self.detect_trigger(assistant_text, ended_turn, stop_met, claimed)
        if stop_met:
            return trigger, reason, None
        human = next_human() if self.takes_human_questions else None
        return trigger, reason, self.decide(trigger, reason, human)

    def detect_trigger(self, assistant_text: str, ended_turn: bool, stop_met: bool,
                       claimed: str = "") -> tuple[str, str]:
        """(trigger, reason) that holds now, or ("", ""). `claimed` is a claim the agent stated outright."""
        st, cfg = self.state, self.config
        if st.pending_suspicion:
            return "suspicious", "; ".join(st.pending_suspicion)
        if not stop_met:
            claim = detect_claim("\n".join(filter(None, (claimed, assistant_text))))
            if claim:
                return "claim", f"agent said {claim.phrase!r} ({claim.kind}) while the stop condition does not hold"
            if claimed.strip():
                return "claim", (f"agent claimed {' '.join(claimed.split())[:120]!r} while the stop condition does "
                                 "not hold")
            if ended_turn:
                return "claim", "agent ended its turn while the stop condition does not hold"
        if st.runs_since_best >= cfg.stall_runs:
            return "stall", f"no new best in {st.runs_since_best} harness runs"
        if st.calls_since_best >= cfg.stall_calls:
            return "stall", f"no new best in {st.calls_since_best} tool calls"
        return "", ""

    def decide(self, trigger: str, reason: str, human: Optional[dict] = None) -> Optional[Inquiry]:
        """The question to ask now, if any. `human` is the person's waiting inbox item ({text, question_id})."""
        self.state.pending_suspicion = []
        inquiry = None
        if human and self.takes_human_questions:
            qid = human.get("question_id") or ""
            layer = next((q.layer for q in self.bank if q.id == qid), "")
            inquiry = Inquiry(trigger or "human", "human", human["text"], qid, layer, reason or "a person asked")
        elif trigger and self.mode in ("bank", "hybrid"):
            question = self.pick(trigger)
            if question:
                inquiry = Inquiry(trigger, "bank", question.text, question.id, question.layer, reason)
        if inquiry:
            self._asked(inquiry)
        return inquiry

    def pick(self, trigger: str) -> Optional[Question]:
        st = self.state
        last = st.asked[-1] if st.asked else None
        candidates = [q for q in self.bank if q.trigger in (trigger, "any") and q.id != last]
        if not candidates:
            return None
        recent = st.layers[-self.config.recent_layers:] if self.config.recent_layers else []

        def rank(q: Question):
            exact = 0 if q.trigger == trigger else 1          # a question written for this trigger first
            layer_recency = (len(recent) - recent[::-1].index(q.layer)) if q.layer in recent else 0
            return (st.asked.count(q.id), layer_recency, exact, self._rng.random())
        return min(candidates, key=rank)

    def _asked(self, inquiry: Inquiry) -> None:
        st = self.state
        st.asked.append(inquiry.question_id or f"human:{inquiry.text[:40]}")
        if inquiry.layer:
            st.layers.append(inquiry.layer)
        # a question opens a fresh window: the stall counters start again
        st.runs_since_best, st.calls_since_best = 0, 0

    # ---- resume --------------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {"state": asdict(self.state), "rng": _rng_state(self._rng)}

    def restore(self, snap: dict) -> None:
        self.state = PolicyState(**snap["state"])
        self._rng.setstate(_rng_unstate(snap["rng"]))


def _rng_state(rng: random.Random) -> list:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _rng_unstate(data: list) -> tuple:
    return (data[0], tuple(data[1]), data[2])


class Inbox:
    """Questions a person typed, waiting for the next turn boundary. Safe to push from any thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items: deque = deque()

    def push(self, text: str, question_id: str = "") -> None:
        text = (text or "").strip()
        if text:
            with self._lock:
                self._items.append({"text": text, "question_id": question_id})

    def pop(self) -> Optional[dict]:
        with self._lock:
            return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
