"""A campaign run by an agent the workbench does not drive: Claude Code, Codex, Cursor, a local model, a script.

    service = CampaignService.create(config)                     # campaigns/<id>/, as `workbench campaign` makes it
    service = CampaignService.open("campaigns", "c-1")           # later, from any process
    with service.session("mcp"):                                 # the campaign's lock, held for the block
        reply = service.check("kernel.cu", claim="at the bandwidth limit")
        print(reply.text)     # the harness summary, a question block if one fired, the stop condition

`workbench mcp` (mcp_server.py) and `workbench check --campaign` / `workbench ask` (external_cli.py) are thin
front ends over this class: one implementation of a harness call in such a campaign (artifacts/<sha>.cu, the
harness, and the built-in loop's trace recorder writing the call, its `evaluations` rows, the question and the
messages, one turn per call) and one policy (`Policy.question_at_boundary`, the built-in loop's turn-boundary
decision: stall, suspicious gain, a claim in the `claim` / `notes` text). A person's question waits in the inbox
file (questions/inbox.py: `workbench ask`, the notebook's chat box) and rides on the next check result.

The loop state (policy, best so far, inbox position) is a snapshot per committed turn under state/, written
before the turn's rows, so a process killed mid-call loses at most that call and never duplicates a row
(`trim_uncommitted` on the next open, as `workbench campaign --resume` does).
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from workbench import __version__
from workbench.agent import campaign_inputs, campaign_text
from workbench.agent.campaign_inputs import CampaignError  # noqa: F401  (re-exported: the front ends catch it)
from workbench.agent.tool_format import format_result
from workbench.campaign.config import CampaignConfig, config_problem, new_campaign_id
from workbench.campaign.events import (CampaignStarted, CampaignStopped, EvaluationDone, EventBus, InterventionFired,
                                       MessageDone, Notice, ToolCallFinished, ToolCallStarted, TriggerDetected,
                                       TurnCommitted, TurnStarted)
from workbench.campaign.main_anchor import LEGACY_MAIN, best_state, recorded_best, run_figures, take_best
from workbench.campaign.recorder import TraceRecorder, committed_turn, trim_uncommitted
from workbench.campaign.workspace import Workspace, check_campaign_id, enclosing_workspace, inside_hint
from workbench.questions.bank import TRIGGERS, load_bank
from workbench.questions.inbox import read_inbox
from workbench.questions.policy import Inquiry, Policy

EXTERNAL_AGENT = "external"             # sessions.agent of a campaign whose agent runs outside the workbench
LOCK_FILE = ".lock"


@dataclass
class Reply:
    """What one call returns: the text the agent reads, and what a front end needs besides it."""
    text: str
    result: object = None               # the SuiteResult of a harness run
    inquiry: Optional[Inquiry] = None
    stop_met: bool = False
    kernel_sha: str = ""
    is_error: bool = False              # the call could not be carried out (recorded with is_error as well)


class CampaignService:
    def __init__(self, ws: Workspace, config: CampaignConfig, evaluator: Callable | None = None,
                 bank: list | None = None):
        self.ws, self.config = ws, config
        self.evaluator = evaluator
        self.policy = Policy(config.mode, bank if bank is not None else load_bank(config.bank_path), config.policy,
                             seed=config.seed)
        self.bus = EventBus()
        self._mutex = threading.Lock()   # an MCP server runs tool calls on worker threads: one at a time
        self._held = False
        self.interface = ""
        self.main_anchor = config_problem(config).main_anchor or LEGACY_MAIN
        self._reset_state()

    def _reset_state(self) -> None:
        self.turn = self.tool_index = self.runs = self.inbox_read = 0
        self.best_vs_original = self.best_vs_fa3 = self.best_vs_main = None
        self.best_sha = self.last_message_id = ""
        self.stop_met = False
        self.last_question: Optional[dict] = None
        self.created_at = time.time()

    # ---- construction --------------------------------------------------------------------------------
    @classmethod
    def create(cls, config: CampaignConfig, evaluator: Callable | None = None, bank: list | None = None,
               kernel_text: str | None = None) -> "CampaignService":
        config.campaign_id = config.campaign_id or new_campaign_id(config.mode)
        config.agent = EXTERNAL_AGENT
        source = Path(config.kernel_path)
        if kernel_text is None and not source.is_file():
            raise CampaignError(f"kernel {config.kernel_path} not found; pass --kernel PATH to a .cu file")
        bank = bank if bank is not None else load_bank(config.bank_path)   # a bad bank: refused before the folder
        ws = Workspace.create(config.root, config.campaign_id, source, config.to_dict(), kernel_text=kernel_text)
        config.initial_sha = ws.save_artifact(ws.kernel_path.read_text())
        ws.write_config(config.to_dict() | {"created_at": time.time()})
        service = cls(ws, config, evaluator, bank)
        service.created_at = ws.read_config()["created_at"]
        ws.write_snapshot(0, service._snapshot())
        return service

    @classmethod
    def open(cls, root: str | Path, campaign_id: str, evaluator: Callable | None = None,
             bank: list | None = None) -> "CampaignService":
        root_dir = Path(root) / check_campaign_id(campaign_id)
        if not (root_dir / "config.json").exists():
            known = sorted(p.parent.name for p in Path(root).glob("*/config.json")) if Path(root).is_dir() else []
            hint = f" (campaigns there: {', '.join(known[:8])})" if known else ""
            inside = enclosing_workspace()
            if inside is not None:
                raise CampaignError(inside_hint(inside, root, campaign_id))
            raise CampaignError(f"no campaign {campaign_id!r} under {root}/{hint}; start it with `workbench mcp "
                                f"--campaign {campaign_id} --kernel PATH` or `workbench check PATH --campaign "
                                f"{campaign_id} --new`")
        ws = Workspace.open(root, campaign_id)
        data = ws.read_config()
        config = CampaignConfig.from_dict(data)
        if config.agent != EXTERNAL_AGENT:
            raise CampaignError(f"campaign {campaign_id} is run by the workbench's own agent ({config.agent}); "
                                f"continue it with `workbench campaign --resume {campaign_id}`")
        service = cls(ws, config, evaluator, bank)
        service.created_at = float(data.get("created_at") or time.time())
        return service

    # ---- the lock and the session row ------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self, interface: str):
        """Hold the campaign (one server or one CLI call at a time), bring the state to the last committed
        call, and record the session row on the way in and out. Raises LockHeld when another process has it."""
        from workbench.locks import hold_lock

        with hold_lock(self.ws.root / LOCK_FILE, what=f"campaign {self.ws.campaign_id}"):
            self._load()
            self.interface = interface
            recorder = TraceRecorder(self.ws.traces_dir, self.ws.campaign_id, self._session_info())
            unsubscribe = self.bus.subscribe(recorder, critical=True)
            c = self.config
            self.bus.publish(CampaignStarted(campaign_id=self.ws.campaign_id, mode=c.mode, model="",
                                             agent=f"{EXTERNAL_AGENT} ({interface})", kernel_path=c.kernel_path,
                                             suite=c.suite, stop_expr=c.stop_expr, workspace=str(self.ws.root),
                                             resumed=self.turn > 0, turn=self.turn,
                                             main_anchor=self.main_anchor))
            self._held = True
            try:
                yield self
            finally:
                self._held = False
                reason, detail = self.standing()
                self.bus.publish(CampaignStopped(reason=reason, detail=detail, turn=self.turn,
                                                 tool_calls=self.tool_index, best_sha=self.best_sha,
                                                 best_vs_original=self.best_vs_original, best_vs_fa3=self.best_vs_fa3,
                                                 tokens=0, cost_usd=0.0, wall_s=time.time() - self.created_at,
                                                 main_anchor=self.main_anchor, best_vs_main=self.best_vs_main))
                unsubscribe()

    def _session_info(self) -> dict:
        c = self.config
        return {"source": "workbench", "campaign_id": self.ws.campaign_id, "arm": c.arm or c.mode,
                "agent": EXTERNAL_AGENT, "model": "", "kernel_path": c.kernel_path, "suite": c.suite,
                "stop_expr": c.stop_expr, "workbench_version": __version__,
                "config_json": json.dumps(c.to_dict(), default=str)}

    def standing(self) -> tuple[str, str]:
        """(reason, detail) for the sessions row: what the campaign's state is when a session ends."""
        if self.stop_met:
            return "stop_condition_met", f"the harness reports that {self.config.stop_expr} holds"
        spent = self._budget_spent()
        if spent:
            return spent
        return "waiting_for_agent", "the stop condition does not hold; the agent's next check continues it"

    # ---- state: one snapshot per committed call ------------------------------------------------------
    def _snapshot(self) -> dict:
        return {"kind": "external", "turn": self.turn, "tool_index": self.tool_index, "runs": self.runs,
                "inbox_read": self.inbox_read, **best_state(self), "stop_met": self.stop_met,
                "last_question": self.last_question, "last_message_id": self.last_message_id,
                "policy": self.policy.snapshot()}

    def _load(self) -> None:
        cid = self.ws.campaign_id
        committed = committed_turn(self.ws.traces_dir, cid)
        snap = self.ws.load_snapshot(committed)
        if snap is None or snap.get("kind") != "external":
            raise CampaignError(f"campaign {cid}: no saved state for call {committed} under {self.ws.root}/state; "
                                "it cannot be continued")
        trim_uncommitted(self.ws.traces_dir, cid, committed)
        self.ws.prune_snapshots(committed)
        self._reset_state()
        self.created_at = float(self.ws.read_config().get("created_at") or self.created_at)
        for key in ("turn", "tool_index", "runs", "inbox_read", "best_vs_original", "best_vs_fa3", "best_sha",
                    "stop_met", "last_question", "last_message_id"):
            setattr(self, key, snap[key])
        self.best_vs_main = recorded_best(snap, self.main_anchor)    # an older snapshot: attention's best_vs_fa3
        self.policy.restore(snap["policy"])

    # ---- what the agent can call ---------------------------------------------------------------------
    def resolve_kernel(self, path: str | None) -> Path:
        return campaign_inputs.resolve_kernel(self.ws, path)

    def check_inputs(self, path: str | None = None, suite: str | None = None, claim: str = "",
                     notes: str = "") -> tuple[str, str]:
        """(kernel text, suite for the harness) of a check, or CampaignError: what `check` refuses before a turn
        is spent. Needs no session: a front end can refuse a call before it opens one (and rewrites its row)."""
        text = campaign_inputs.kernel_text(self.ws, self.resolve_kernel(path))
        campaign_inputs.note(claim, "claim")
        campaign_inputs.note(notes, "notes")
        return text, self._suite(suite)

    def check(self, path: str | None = None, suite: str | None = None, claim: str = "", notes: str = "",
              progress: Callable[[str], None] | None = None) -> Reply:
        """Judge a kernel of the workspace, record it, and ask a question if the policy fires."""
        with self._mutex:
            self._require_session()
            text, suite = self.check_inputs(path, suite, claim, notes)      # refused before a turn
            spent = self._budget_spent()
            if spent:
                raise CampaignError(f"campaign {self.ws.campaign_id}: {spent[1]}; the campaign is over "
                                    f"(stop condition {self.config.stop_expr!r} not met)")
            data = {k: v for k, v in (("path", path), ("suite", suite if suite != self.config.suite else None),
                                      ("claim", claim), ("notes", notes)) if v}
            return self._turn("check_kernel", data, lambda: self._harness(text, suite, progress),
                              claimed=claim, notes=notes)

    def ask(self, trigger: str = "") -> Reply:
        """A question on the agent's request: the person's waiting one first (modes human, hybrid), else the
        bank's best for `trigger` (modes bank, hybrid). The baseline mode tools_only asks nothing."""
        trigger = (trigger or "any").strip()
        if trigger not in TRIGGERS:
            raise CampaignError(f"trigger {trigger!r} is not one of {', '.join(TRIGGERS)}")
        with self._mutex:
            self._require_session()
            if self.config.mode == "tools_only":
                raise CampaignError(f"campaign {self.ws.campaign_id} runs in mode tools_only (the baseline arm): "
                                    "it asks no questions")
            return self._turn("ask_question", {"trigger": trigger}, None, asked_trigger=trigger)

    def _require_session(self) -> None:
        if not self._held:
            raise RuntimeError("CampaignService calls must run inside `with service.session(...)`")

    def _suite(self, suite: str | None) -> str:
        return campaign_inputs.call_suite(self.ws, suite, self.config.suite, problem=config_problem(self.config))

    def _harness(self, text: str, suite: str, progress):
        """(text, result, sha): the source becomes an artifact; the harness judges the artifact."""
        from workbench.harness.result import CheckRequest

        sha = self.ws.save_artifact(text)
        c = self.config
        progress = progress or (lambda line: None)
        request = CheckRequest(kernel_path=str(self.ws.artifacts_dir / f"{sha}.cu"), suite=suite,
                               anchors=tuple(c.anchors), stop_expr=c.stop_expr, previous_best=self.best_vs_original,
                               problem=config_problem(c).ref)
        progress(f"judging artifacts/{sha[:12]}.cu on suite {Path(suite).name}")
        if self.evaluator is not None:
            result = self.evaluator(request)
        else:
            from workbench.harness.check import check
            result = check(request, progress=progress)
        result.eval_id = result.eval_id or uuid.uuid4().hex[:12]
        progress(f"judged artifacts/{sha[:12]}.cu: {result.status.replace('_', ' ')}")
        return format_result(result, sha) + "\n" + campaign_text.result_line(result, self.ws.campaign_id), result, sha

    # ---- one call = one committed turn ----------------------------------------------------------------
    def _turn(self, tool: str, data: dict, run, claimed: str = "", notes: str = "",
              asked_trigger: str = "") -> Reply:
        turn, cid, publish = self.turn + 1, self.ws.campaign_id, self.bus.publish
        call_id = f"{tool}_{cid}_{turn:05d}"
        publish(TurnStarted(turn=turn))
        call_message = f"call_{cid}_{turn:05d}"
        publish(MessageDone(turn=turn, message_id=call_message, parent_id=self.last_message_id, role="assistant",
                            content=[{"type": "tool_use", "id": call_id, "name": tool, "input": data}]))
        self.tool_index += 1
        self.policy.on_tool_call()
        publish(ToolCallStarted(turn=turn, call_id=call_id, tool_index=self.tool_index, name=tool, input=data))
        started, t0 = time.time(), time.monotonic()
        text, result, sha, is_error = "", None, "", False
        if run is not None:
            try:
                text, result, sha = run()
            except Exception as err:        # the harness could not run: the agent reads why, the call is recorded
                text, is_error = f"the harness could not run: {type(err).__name__}: {err}", True
        if result is not None:
            self.runs += 1
            self._evaluated(turn, call_id, result, sha)
        if asked_trigger:
            human = self._next_human() if self.policy.takes_human_questions else None
            inquiry = self.policy.decide(asked_trigger, "the agent asked for a question", human)
            trigger, why = inquiry.trigger if inquiry else "", inquiry.reason if inquiry else ""
        else:
            trigger, why, inquiry = self.policy.question_at_boundary(notes, False, self.stop_met, self._next_human,
                                                                     claimed=claimed)
        if trigger:
            publish(TriggerDetected(turn=turn, trigger=trigger, reason=why))
        parts = [text] if text else []
        if inquiry:
            parts.append(campaign_text.question_block(inquiry))
        elif asked_trigger:
            parts.append("No question now: " + ("no person's question is waiting" if self.config.mode == "human"
                                                else f"the bank has none for trigger {asked_trigger}") + ".")
        parts.append(self.status_line())
        text = "\n\n".join(parts)
        publish(ToolCallFinished(turn=turn, call_id=call_id, tool_index=self.tool_index, name=tool, input=data,
                                 output=text, is_error=is_error, started_at=started, duration_s=time.monotonic() - t0))
        content = [{"type": "tool_result", "tool_use_id": call_id, "content": text} | ({"is_error": True}
                                                                                         if is_error else {})]
        human_block = None
        if inquiry:
            fired = InterventionFired(turn=turn, tool_index=self.tool_index, intervention_id=uuid.uuid4().hex[:12],
                                      trigger=inquiry.trigger, source=inquiry.source,
                                      question_id=inquiry.question_id, text=inquiry.text, layer=inquiry.layer,
                                      reason=inquiry.reason, best_before=self.best_vs_original)
            self.last_question = fired.to_dict()
            publish(fired)
            content.append({"type": "text", "text": inquiry.text})
            human_block = 1 if inquiry.source == "human" else None
        user_message = f"user_{cid}_{turn:05d}"
        publish(MessageDone(turn=turn, message_id=user_message, parent_id=call_message, role="user", content=content,
                            human_block=human_block))
        self.turn, self.last_message_id = turn, user_message
        # state first, then the record: a kill between them leaves a snapshot of a call that is not committed
        self.ws.write_snapshot(turn, self._snapshot())
        publish(TurnCommitted(turn=turn, tool_index=self.tool_index, tokens=0, cost_usd=0.0))
        self.ws.prune_snapshots(turn)
        return Reply(text=text, result=result, inquiry=inquiry, stop_met=bool(result is not None and result.stop_met),
                     kernel_sha=sha, is_error=is_error)

    def _evaluated(self, turn: int, call_id: str, result, sha: str) -> None:
        figures = run_figures(result, self.main_anchor)
        new_best = self.policy.on_result(result, self.main_anchor, {"original": self.best_vs_original,
                                                                   self.main_anchor: self.best_vs_main})
        if new_best:
            take_best(self, figures, sha)
        self.stop_met = bool(result.stop_met)
        self.bus.publish(EvaluationDone(turn=turn, call_id=call_id, tool_index=self.tool_index,
                                        eval_id=result.eval_id, kernel_sha=sha, result=result, **figures,
                                        best_vs_original=self.best_vs_original, best_vs_fa3=self.best_vs_fa3,
                                        is_new_best=new_best, main_anchor=self.main_anchor,
                                        best_vs_main=self.best_vs_main))

    def _next_human(self) -> Optional[dict]:
        """The person's next waiting question from the inbox file (its position is part of the snapshot)."""
        items = read_inbox(self.ws.root)
        while self.inbox_read < len(items):
            item = items[self.inbox_read]
            self.inbox_read += 1
            if item:
                return {"text": item["text"], "question_id": item.get("question_id") or ""}
            self.bus.publish(Notice(level="warning", text=f"inbox line {self.inbox_read} is not a question; skipped"))
        return None

    # ---- status ------------------------------------------------------------------------------------------
    def _budget_spent(self) -> tuple[str, str] | None:
        b = self.config.budget
        if self.tool_index >= b.tool_calls:
            return "budget_tool_calls", f"the budget of {b.tool_calls} tool calls is spent"
        elapsed = time.time() - self.created_at
        if elapsed >= b.wall_s:
            return "budget_wall_time", f"the wall-time budget ({b.wall_s:.0f} s) is spent"
        return None

    def waiting_questions(self) -> int:
        """A person's questions not yet delivered (read without the lock: a server may hold it)."""
        read = self.inbox_read
        if not self._held:
            snap = {}
            for _ in range(5):          # the holder may be merging the parts this reads: read again
                with contextlib.suppress(FileNotFoundError):
                    snap = self.ws.load_snapshot(committed_turn(self.ws.traces_dir, self.ws.campaign_id)) or {}
                    break
            read = int(snap.get("inbox_read") or 0)
        return sum(1 for item in read_inbox(self.ws.root)[read:] if item)

    def status_line(self) -> str:
        return campaign_text.status_line(self.status())

    def status(self) -> dict:
        b = self.config.budget
        left_s = max(0.0, b.wall_s - (time.time() - self.created_at))
        return {"campaign_id": self.ws.campaign_id, "workspace": str(self.ws.root),
                "kernel": str(self.ws.kernel_path), "mode": self.config.mode, "suite": self.config.suite,
                "stop_expr": self.config.stop_expr, "stop_met": self.stop_met, "harness_runs": self.runs,
                "tool_calls": self.tool_index, **best_state(self),
                "budget_left": {"tool_calls": max(0, b.tool_calls - self.tool_index), "wall_s": round(left_s)},
                "last_question": {k: self.last_question.get(k) for k in ("trigger", "source", "question_id", "text")}
                if self.last_question else None, "questions_waiting": self.waiting_questions()}

    def status_text(self) -> str:
        return campaign_text.status_text(self.status())

    # every reply ends with the campaign's standing (the stop condition), as check_kernel's does
    def bank_text(self, trigger: str = "") -> str:
        return campaign_text.bank_text(self.policy.bank, self.config.mode, trigger) + "\n\n" + self.status_line()

    def suite_text(self, suite: str | None = None) -> str:
        from workbench.harness.scenarios import load_suite

        name = self._suite(suite)
        shown = (suite or "").strip() or self.config.suite
        return campaign_text.suite_text(shown, load_suite(name, problem=config_problem(self.config))) + "\n\n" + \
            self.status_line()
