"""The campaign loop: one agent, one kernel, tools, questions at turn boundaries, until the harness says stop.

    config = CampaignConfig(kernel_path="kernels/attn_fwd/original.cu", suite="dev26", mode="bank")
    campaign = Campaign.create(config, backend)          # campaigns/<id>/ is made; traces are recorded
    campaign.subscribe(my_callback)                      # every event (workbench.campaign.events)
    summary = campaign.run()                             # -> CampaignStopped

From another thread (a notebook widget): `campaign.ask("are you winning on cycles or on wall time?")` puts a
person's question in the inbox (delivered at the next turn boundary in modes human/hybrid) and
`campaign.stop()` ends the campaign at the next turn boundary. `Campaign.resume(id, backend)` continues a
campaign after a crash or an interrupt from its last committed turn.

A turn: the backend produces an assistant message; its tool calls run in order; the intervention policy looks
at the turn; the next user message is the tool results, then the question if one is asked (or, when the agent
ended its turn with no tool call and nothing is asked, a one-line note that the stop condition does not hold).
The campaign ends only when a harness run reports that the stop predicate holds, or a budget runs out.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

from workbench import __version__
from workbench.agent.backends.turns import BackendError, BackendExhausted, TurnRequest
from workbench.agent.prompts import (CONTINUE_TEXT, OPENING_TEXT, SYSTEM_PROMPT,  # noqa: F401  (re-exported)
                                     TRUNCATED_TEXT, system_prompt)
from workbench.agent.tools import HarnessDefaults, Toolbox
from workbench.campaign.config import CampaignConfig, _config_json, campaign_problem, new_campaign_id
from workbench.campaign.events import (CampaignStarted, CampaignStopped, EvaluationDone, EventBus, InterventionFired,
                                       MessageDelta, MessageDone, Notice, ToolCallFinished, ToolCallStarted,
                                       TriggerDetected, TurnCommitted, TurnStarted)
from workbench.campaign.main_anchor import LEGACY_MAIN, best_state, recorded_best, run_figures, take_best
from workbench.campaign.recorder import TraceRecorder, committed_turn, trim_uncommitted
from workbench.campaign.workspace import Workspace, WorkspaceError
from workbench.locks import HeldLock, acquire_lock
from workbench.questions.bank import load_bank
from workbench.questions.policy import Inbox, Policy
from workbench.redaction import context_after, redact, redact_json, redact_pieces

MAX_INPUT_DEPTH = 32          # a tool input nested deeper is refused (and recorded as a placeholder)

log = logging.getLogger(__name__)


class Campaign:
    def __init__(self, config: CampaignConfig, backend, workspace: Workspace, evaluator: Callable | None = None,
                 bank: list | None = None, record: bool = True):
        self.config, self.backend, self.ws = config, backend, workspace
        self.bus = EventBus()
        self.inbox = Inbox()
        self._stop_requested = threading.Event()
        self.policy = Policy(config.mode, bank if bank is not None else load_bank(config.bank_path),
                             config.policy, seed=config.seed)
        # a replaying backend answers the harness and GPU tools from its recording
        evaluator = evaluator or getattr(backend, "evaluator", None)
        definition = campaign_problem(config.problem, config.kernel_path)
        problem = definition.ref                        # '' in configs made before problems
        self.main_anchor = definition.main_anchor or LEGACY_MAIN
        self.toolbox = Toolbox(workspace, evaluator, HarnessDefaults(
            suite=config.suite, stop_expr=config.stop_expr, anchors=tuple(config.anchors), problem=problem),
            best_provider=lambda: self.best_vs_original, recorded=getattr(backend, "recorded", None))
        self.system = system_prompt(config)
        # loop state (snapshotted after every committed turn)
        self.messages: list = []
        self.questions: list = []           # InterventionFired.to_dict() of every question asked
        self.turn = 0
        self.tool_index = 0
        self.tokens = 0
        self.idle_turns = 0           # consecutive turns without a tool call
        self.cost_usd = 0.0
        self.elapsed_s = 0.0
        self.best_vs_original: Optional[float] = None
        self.best_vs_fa3: Optional[float] = None
        self.best_vs_main: Optional[float] = None      # the main anchor's figure of the best run
        self.best_sha = ""
        self.last_message_id = ""
        self.resumed = False
        self._lock: Optional[HeldLock] = None      # one process runs a campaign at a time (workspace .lock)
        self._turn_text: list = []                 # raw strings of the turn in flight, for redacting it whole
        self._said_tail = ""                       # raw end of the agent's earlier turns (a key split over two)
        self._t0 = time.monotonic()
        if record:
            info = {"source": "workbench", "campaign_id": workspace.campaign_id, "arm": config.arm or config.mode,
                    "agent": config.agent, "model": config.model or getattr(backend, "model", ""),
                    "kernel_path": config.kernel_path, "suite": config.suite, "stop_expr": config.stop_expr,
                    "workbench_version": __version__, "config_json": _config_json(config)}
            self.subscribe(TraceRecorder(workspace.traces_dir, workspace.campaign_id, info), critical=True)

    # ---- construction ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, config: CampaignConfig, backend, evaluator: Callable | None = None, bank: list | None = None,
               kernel_text: str | None = None) -> "Campaign":
        config.campaign_id = config.campaign_id or new_campaign_id(config.mode)
        config.agent = config.agent or getattr(backend, "name", "")
        if not config.model:
            config.model = getattr(backend, "model", "")
        source = Path(config.kernel_path)
        if kernel_text is None and not source.is_file():
            raise WorkspaceError(f"kernel {config.kernel_path} not found; pass --kernel PATH to a .cu file")
        bank = bank if bank is not None else load_bank(config.bank_path)   # a bad bank: refused before the folder
        ws = Workspace.create(config.root, config.campaign_id, source, config.to_dict(), kernel_text=kernel_text)
        lock = _lock_campaign(ws)
        config.initial_sha = ws.save_artifact(ws.read_kernel())
        ws.write_config(config.to_dict())
        campaign = cls(config, backend, ws, evaluator, bank)
        campaign._lock = lock
        ws.write_snapshot(0, campaign._snapshot())
        return campaign

    @classmethod
    def resume(cls, campaign_id: str, backend, root: str = "campaigns", evaluator: Callable | None = None,
               bank: list | None = None) -> "Campaign":
        ws = Workspace.open(root, campaign_id)
        # a bad bank is refused before the lock is taken or anything trimmed
        bank = bank if bank is not None else load_bank(CampaignConfig.from_dict(ws.read_config()).bank_path)
        lock = _lock_campaign(ws)        # before anything is trimmed: a second resume is refused here
        config = CampaignConfig.from_dict(ws.read_config())
        if config.agent == "external":      # campaign_service.EXTERNAL_AGENT: its agent runs outside the workbench
            raise WorkspaceError(f"campaign {campaign_id} is run by an agent of your own; continue it with "
                                 f"`workbench mcp --campaign {campaign_id}` or `workbench check KERNEL --campaign "
                                 f"{campaign_id}`")
        committed = committed_turn(ws.traces_dir, campaign_id)
        snap = ws.load_snapshot(committed)
        if snap is None:
            raise WorkspaceError(f"campaign {campaign_id}: no saved state for turn {committed}; cannot resume")
        trim_uncommitted(ws.traces_dir, campaign_id, committed)
        ws.prune_snapshots(committed)
        campaign = cls(config, backend, ws, evaluator, bank)
        campaign._lock = lock
        campaign._restore(snap)
        campaign.resumed = True
        return campaign

    # ---- the API a UI uses (thread-safe) ----------------------------------------------------------------
    def subscribe(self, fn, critical: bool = False) -> Callable[[], None]:
        return self.bus.subscribe(fn, critical)

    def ask(self, text: str, question_id: str = "") -> bool:
        """Queue a person's question for the next turn boundary. False (and a Notice) when the mode asks
        no person's questions (tools_only, bank)."""
        if not self.policy.takes_human_questions:
            self.bus.publish(Notice(level="warning", text=f"mode {self.config.mode} does not deliver a person's "
                                    "questions; use mode human or hybrid"))
            return False
        self.inbox.push(text, question_id)
        return True

    def stop(self) -> None:
        """End the campaign at the next turn boundary."""
        self._stop_requested.set()

    def start(self) -> threading.Thread:
        """Run on a worker thread (a notebook keeps its kernel free); join it or wait for CampaignStopped."""
        worker = threading.Thread(target=self.run, name=f"campaign-{self.ws.campaign_id}", daemon=True)
        worker.start()
        return worker

    # ---- running ------------------------------------------------------------------------------------
    def run(self) -> CampaignStopped:
        """Run to the end; the campaign's lock is held until then (LockHeld if another process has it)."""
        if self._lock is None or not self._lock.held:
            self._lock = _lock_campaign(self.ws)
        try:
            return self._run()
        finally:
            self._lock.release()

    def _run(self) -> CampaignStopped:
        self._t0 = time.monotonic()
        c = self.config
        self.bus.publish(CampaignStarted(campaign_id=self.ws.campaign_id, mode=c.mode, agent=c.agent,
                                         model=c.model, kernel_path=c.kernel_path, suite=c.suite,
                                         stop_expr=c.stop_expr, workspace=str(self.ws.root), resumed=self.resumed,
                                         turn=self.turn, main_anchor=self.main_anchor))
        reason = detail = ""
        try:
            while not reason:
                reason, detail = self._budget_left_before_turn()
                if not reason and self._stop_requested.is_set():
                    reason, detail = "stopped_by_user", "stop requested"
                if not reason:
                    reason, detail = self._one_turn()
        except BackendExhausted as err:
            reason, detail = "agent_finished", str(err)
        except BackendError as err:
            reason, detail = "backend_error", str(err)
        except KeyboardInterrupt:
            reason, detail = "interrupted", f"resume with --resume {self.ws.campaign_id}"
        except Exception as err:      # a bug must still end the campaign visibly (the UI waits for the stop)
            log.exception("campaign %s failed", self.ws.campaign_id)
            reason, detail = "internal_error", f"{type(err).__name__}: {err} (resume with --resume " \
                                               f"{self.ws.campaign_id})"
        stopped = CampaignStopped(reason=reason, detail=detail, turn=self.turn, tool_calls=self.tool_index,
                                  best_sha=self.best_sha, best_vs_original=self.best_vs_original,
                                  best_vs_fa3=self.best_vs_fa3, tokens=self.tokens, cost_usd=self.cost_usd,
                                  wall_s=self._elapsed(), main_anchor=self.main_anchor,
                                  best_vs_main=self.best_vs_main)
        self.bus.publish(stopped)
        return stopped

    def _elapsed(self) -> float:
        return self.elapsed_s + (time.monotonic() - self._t0)

    def _budget_left_before_turn(self) -> tuple[str, str]:
        b = self.config.budget
        if self.turn >= b.turns:
            return "budget_turns", f"{self.turn} turns"
        if self.tool_index >= b.tool_calls:
            return "budget_tool_calls", f"{self.tool_index} tool calls"
        if self.tokens >= b.tokens:
            return "budget_tokens", f"{self.tokens} tokens"
        if self.cost_usd >= b.usd:
            return "budget_usd", f"${self.cost_usd:.2f}"
        if self._elapsed() >= b.wall_s:
            return "budget_wall_time", f"{self._elapsed():.0f} s"
        if self.idle_turns >= b.idle_turns:
            return "budget_idle_turns", f"{self.idle_turns} turns in a row without a tool call"
        return "", ""

    def _opening_message(self, turn: int) -> None:
        """The task as the first user message (recorded like any other message, as turn 1's prompt)."""
        content = [{"type": "text", "text": OPENING_TEXT.format(suite=self.config.suite,
                                                                 stop_expr=self.config.stop_expr or "none")}]
        opening_id = f"user_{self.ws.campaign_id}_00000"
        self.bus.publish(MessageDone(turn=turn, message_id=opening_id, parent_id="", role="user", content=content))
        self.messages.append({"role": "user", "content": content})
        self.last_message_id = opening_id

    def _one_turn(self) -> tuple[str, str]:
        turn = self.turn + 1
        publish = self.bus.publish
        publish(TurnStarted(turn=turn))
        if not self.messages:
            self._opening_message(turn)
        request = TurnRequest(self.system, self.toolbox.specs, list(self.messages), turn, list(self.questions))
        reply = self.backend.next_turn(request, lambda index, text: publish(
            MessageDelta(turn=turn, block_index=index, text=text)))
        assistant_id = reply.message_id or f"msg_{self.ws.campaign_id}_{turn:05d}"
        self.tokens += reply.usage.total
        self.cost_usd += reply.cost_usd or 0.0
        # what is published, recorded, snapshotted and sent back is redacted; the tools run on the raw input
        said = redact_json(reply.content, context=self._said_tail)
        self._turn_text = [_block_strings(b) for b in reply.content]
        self._said_tail = context_after(self._said_tail, self._turn_text)
        publish(MessageDone(turn=turn, message_id=assistant_id, parent_id=self.last_message_id, role="assistant",
                            content=said, model=reply.model, usage=reply.usage, cost_usd=reply.cost_usd,
                            stop_reason=reply.stop_reason))
        self.messages.append({"role": "assistant", "content": said})

        results, stop_met, out_of_calls = [], False, False
        for block in reply.tool_uses:
            if self.tool_index >= self.config.budget.tool_calls:
                out_of_calls = True
                results.append({"type": "tool_result", "tool_use_id": block["id"], "is_error": True,
                                "content": "not run: the campaign's tool-call budget is spent"})
                continue
            stop_met = self._run_tool(turn, block, results) or stop_met

        ended = not reply.tool_uses and reply.stop_reason != "max_tokens"
        self.idle_turns = 0 if reply.tool_uses else self.idle_turns + 1
        trigger, why, inquiry = self.policy.question_at_boundary(reply.text, ended, stop_met, self.inbox.pop)
        if trigger:
            publish(TriggerDetected(turn=turn, trigger=trigger, reason=why))
        content, human_block = list(results), None
        if inquiry:
            inquiry.text = redact(inquiry.text)
            content.append({"type": "text", "text": inquiry.text})
            human_block = len(content) - 1 if inquiry.source == "human" else None
            fired = InterventionFired(turn=turn, tool_index=self.tool_index, intervention_id=uuid.uuid4().hex[:12],
                                      trigger=inquiry.trigger, source=inquiry.source,
                                      question_id=inquiry.question_id, text=inquiry.text, layer=inquiry.layer,
                                      reason=inquiry.reason, best_before=self.best_vs_original)
            self.questions.append(fired.to_dict())
            publish(fired)
        elif not results:
            best = f"x{self.best_vs_original:.3f}" if self.best_vs_original else "no correct run yet"
            content.append({"type": "text", "text": TRUNCATED_TEXT if reply.stop_reason == "max_tokens" else
                            CONTINUE_TEXT.format(stop_expr=self.config.stop_expr or "none", best=best)})
        user_id = f"user_{self.ws.campaign_id}_{turn:05d}"
        publish(MessageDone(turn=turn, message_id=user_id, parent_id=assistant_id, role="user", content=content,
                            human_block=human_block))
        self.messages.append({"role": "user", "content": content})
        # last, the whole turn read together: a secret split over two tool outputs leaves no piece behind
        self.messages[-2:] = redact_json(self.messages[-2:])
        self.turn, self.last_message_id = turn, user_id
        # state first, then the record: a crash between them leaves a snapshot of a turn that is not committed
        self.ws.write_snapshot(turn, self._snapshot())
        publish(TurnCommitted(turn=turn, tool_index=self.tool_index, tokens=self.tokens, cost_usd=self.cost_usd))
        self.ws.prune_snapshots(turn)

        if stop_met:
            return "stop_condition_met", f"the harness reports that {self.config.stop_expr} holds"
        if out_of_calls:
            return "budget_tool_calls", f"{self.tool_index} tool calls"
        return "", ""

    def _run_tool(self, turn: int, block: dict, results: list) -> bool:
        """Run one tool call, publish its events, append its tool_result. True when the stop condition holds."""
        self.tool_index += 1
        self.policy.on_tool_call()
        call_id, name, data = block["id"], block["name"], block.get("input") or {}
        deep = _nesting(data) > MAX_INPUT_DEPTH
        shown = {"refused": f"input nested deeper than {MAX_INPUT_DEPTH} levels"} if deep else redact_json(data)
        self.bus.publish(ToolCallStarted(turn=turn, call_id=call_id, tool_index=self.tool_index, name=name,
                                         input=shown))
        started, t0 = time.time(), time.monotonic()
        if deep:
            from workbench.agent.tools import ToolOutcome
            outcome = ToolOutcome(f"{name}: refused: input nested deeper than {MAX_INPUT_DEPTH} levels", True)
        else:
            outcome = self.toolbox.run(name, data, call_id)
        duration = time.monotonic() - t0
        # redacted together with everything said earlier in the turn (a key printed in two halves)
        self._turn_text.append(outcome.text)
        outcome.text = redact_pieces(self._turn_text)[-1]
        self.bus.publish(ToolCallFinished(turn=turn, call_id=call_id, tool_index=self.tool_index, name=name,
                                          input=shown, output=outcome.text, is_error=outcome.is_error,
                                          started_at=started, duration_s=duration))
        result = {"type": "tool_result", "tool_use_id": call_id, "content": outcome.text}
        if outcome.is_error:
            result["is_error"] = True
        results.append(result)
        if outcome.result is None:
            return False
        return self._on_evaluation(turn, call_id, outcome)

    def _on_evaluation(self, turn: int, call_id: str, outcome) -> bool:
        r = outcome.result
        figures = run_figures(r, self.main_anchor)
        new_best = self.policy.on_result(r, self.main_anchor, {"original": self.best_vs_original,
                                                              self.main_anchor: self.best_vs_main})
        if new_best:
            take_best(self, figures, outcome.kernel_sha)
        self.bus.publish(EvaluationDone(turn=turn, call_id=call_id, tool_index=self.tool_index,
                                        eval_id=outcome.eval_id, kernel_sha=outcome.kernel_sha, result=r, **figures,
                                        best_vs_original=self.best_vs_original, best_vs_fa3=self.best_vs_fa3,
                                        is_new_best=new_best, main_anchor=self.main_anchor,
                                        best_vs_main=self.best_vs_main))
        return bool(r.stop_met)

    # ---- snapshots (resume) ----------------------------------------------------------------------------
    def _snapshot(self) -> dict:
        return {"turn": self.turn, "messages": self.messages, "questions": self.questions,
                "tool_index": self.tool_index, "tokens": self.tokens, "cost_usd": self.cost_usd,
                "elapsed_s": self._elapsed(), **best_state(self), "last_message_id": self.last_message_id,
                "idle_turns": self.idle_turns, "kernel": self.ws.read_kernel(), "policy": self.policy.snapshot(),
                "backend": self.backend.snapshot() if hasattr(self.backend, "snapshot") else {}}

    def _restore(self, snap: dict) -> None:
        for key in ("turn", "messages", "questions", "tool_index", "tokens", "cost_usd", "elapsed_s",
                    "best_vs_original", "best_vs_fa3", "best_sha", "last_message_id"):
            setattr(self, key, snap[key])
        self.idle_turns = snap.get("idle_turns", 0)     # snapshots written before this field existed
        self.best_vs_main = recorded_best(snap, self.main_anchor)
        self.ws.write_kernel(snap["kernel"])
        self.policy.restore(snap["policy"])
        if hasattr(self.backend, "restore"):
            self.backend.restore(snap.get("backend") or {})


def _lock_campaign(ws: Workspace) -> HeldLock:
    return acquire_lock(ws.lock_path, what=f"campaign {ws.campaign_id}")


def _block_strings(block) -> str:
    """The text of one content block, for redacting a turn as a whole."""
    import json
    return block.get("text") or json.dumps(block.get("input", ""), default=str) if isinstance(block, dict) else ""


def _nesting(obj, limit: int = MAX_INPUT_DEPTH + 1) -> int:
    """How deeply obj nests (counted iteratively, stopping at limit: a hostile input cannot recurse us)."""
    depth, level = 0, [obj]
    while level and depth < limit:
        level = [v for o in level for v in (o.values() if isinstance(o, dict) else o if isinstance(o, list) else ())]
        depth += 1 if level else 0
    return depth
