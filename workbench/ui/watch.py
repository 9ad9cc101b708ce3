"""Watch a campaign your own agent runs (`workbench mcp`, `workbench check --campaign`) with the notebook's widgets.

    app, note = watch("campaigns/c-1")       # a CampaignController over a CampaignWatcher, not started yet
    display(app); app.start()                # the chat, the live table and the figures follow the campaign

The watcher stands where the controller expects a Campaign. It tails the campaign's trace tables and, for every
call the campaign has committed, publishes the events the built-in loop would have (the same dataclasses): the
call, its harness run (a SuiteResult rebuilt from the `evaluations` rows, as a replay does), the question, the
message. Whether a run is a new best is decided by the campaign's own policy (interventions.Policy), replayed
over the same runs. The chat box posts a person's question to the campaign's inbox file, as `workbench ask` does;
Stop stops the watching (the agent is not the notebook's to stop). The watcher ends by itself once a run meets
the stop condition.

`watch_demo()` makes a small campaign with CPU stand-in timings and plays an agent's calls into it on a thread,
so the notebook shows what watching looks like on a machine without one.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from workbench.agent.campaign_service import CampaignService
from workbench.campaign.config import CampaignConfig, config_problem
from workbench.campaign.events import (CampaignStarted, CampaignStopped, EvaluationDone, EventBus, InterventionFired,
                                       MessageDone, Notice, ToolCallFinished, ToolCallStarted, TurnCommitted,
                                       TurnStarted)
from workbench.campaign.main_anchor import LEGACY_MAIN, finite
from workbench.campaign.recorder import committed_turn
from workbench.campaign.workspace import Workspace, WorkspaceError
from workbench.questions.bank import load_bank
from workbench.questions.inbox import post_question
from workbench.questions.policy import Policy
from workbench.traces.rows import result_from_rows
from workbench.traces.writer import read_table

POLL_S = 1.0
log = logging.getLogger(__name__)
READ_ATTEMPTS = 5


def _epoch(ts) -> float:
    return ts.timestamp() if ts is not None and ts == ts else time.time()


def _text(x) -> str:
    """A string column's value ("" for a null, which pandas reads as None or NaN)."""
    return x if isinstance(x, str) else ""


def _finite(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and x == x else None


class CampaignWatcher:
    """A campaign folder's committed calls as campaign events, from its traces (any process may be writing them)."""

    def __init__(self, campaign_dir: str | Path, poll_s: float = POLL_S):
        self.ws = Workspace(campaign_dir)
        if not self.ws.config_path.exists():
            raise WorkspaceError(f"{campaign_dir}: not a campaign folder (no config.json); pass campaigns/<id>")
        self.config = CampaignConfig.from_dict(self.ws.read_config())
        self.policy = Policy(self.config.mode, load_bank(self.config.bank_path), self.config.policy,
                             seed=self.config.seed)
        self.bus = EventBus()
        self.poll_s = poll_s
        self.seen_turn = 0
        self.stop_met = False
        # the problem's main anchor as the config names it; each run's rows say it again (older rows: FA3)
        self.main_anchor = config_problem(self.config).main_anchor or LEGACY_MAIN
        self.best = (None, None, "", None)  # best vs original, vs FA3, kernel sha, vs the main anchor
        self._stop = threading.Event()

    # ---- what the controller calls ------------------------------------------------------------------
    def subscribe(self, fn, critical: bool = False):
        return self.bus.subscribe(fn, critical)

    def ask(self, text: str, question_id: str = "") -> bool:
        if not self.policy.takes_human_questions:
            self.bus.publish(Notice(level="warning", text=f"campaign {self.ws.campaign_id} runs in mode "
                                    f"{self.config.mode}, which delivers no person's questions"))
            return False
        post_question(self.ws.root, text, question_id, sender="notebook")
        return True

    def stop(self) -> None:
        self._stop.set()

    def start(self) -> threading.Thread:
        worker = threading.Thread(target=self.run, name=f"watch-{self.ws.campaign_id}", daemon=True)
        worker.start()
        return worker

    # ---- tailing ----------------------------------------------------------------------------------------
    def run(self) -> CampaignStopped:
        c, cid = self.config, self.ws.campaign_id
        self.bus.publish(CampaignStarted(campaign_id=cid, mode=c.mode, agent=f"{c.agent} (watched)", model="",
                                         kernel_path=c.kernel_path, suite=c.suite, stop_expr=c.stop_expr,
                                         workspace=str(self.ws.root), main_anchor=self.main_anchor))
        t0 = time.monotonic()
        reason, detail = "stopped_watching", "the agent may still be working; watch again to follow it"
        try:
            while not self._stop.is_set() and not self.stop_met:
                self.catch_up()
                if not self.stop_met:
                    self._stop.wait(self.poll_s)
        except Exception as err:     # the widgets wait for a stop: a bug must end the watching visibly
            log.exception("watching %s failed", cid)
            reason, detail = "internal_error", f"{type(err).__name__}: {err}"
        if self.stop_met:
            reason, detail = "stop_condition_met", f"the harness reports that {c.stop_expr} holds"
        stopped = CampaignStopped(reason=reason, detail=detail, turn=self.seen_turn, tool_calls=self.seen_turn,
                                  best_sha=self.best[2], best_vs_original=self.best[0], best_vs_fa3=self.best[1],
                                  tokens=0, cost_usd=0.0, wall_s=time.monotonic() - t0,
                                  main_anchor=self.main_anchor, best_vs_main=self.best[3])
        self.bus.publish(stopped)
        return stopped

    def _read(self):
        """(committed call, the four tables), read again when a part file vanished under the read: the writer
        merges a session's parts whenever a session of the campaign ends, in another process."""
        root, cid = self.ws.traces_dir, self.ws.campaign_id
        for attempt in range(READ_ATTEMPTS):
            try:
                committed = committed_turn(root, cid)
                if committed <= self.seen_turn:
                    return committed, {}
                return committed, {t: read_table(root, t, cid) for t in
                                   ("messages", "tool_calls", "evaluations", "interventions")}
            except FileNotFoundError:
                time.sleep(0.05 * (attempt + 1))
        return self.seen_turn, {}         # still moving: the next look catches up

    def catch_up(self) -> int:
        """Publish the calls committed since the last look; returns how many."""
        committed, tables = self._read()
        if committed <= self.seen_turn:
            return 0
        for turn in range(self.seen_turn + 1, committed + 1):
            self._publish_turn(turn, {t: f[f["turn"] == turn] for t, f in tables.items()})
            self.seen_turn = turn
            if self.stop_met:
                break
        return committed - self.seen_turn

    def _publish_turn(self, turn: int, rows: dict) -> None:
        publish = self.bus.publish
        publish(TurnStarted(turn=turn))
        messages = rows["messages"].sort_values(["ts", "block_index"], kind="stable")
        by_message = {mid: group.sort_values("block_index")
                      for mid, group in messages.groupby("message_id", sort=False)}
        for mid, group in by_message.items():
            if group.iloc[0]["role"] == "assistant":
                publish(MessageDone(turn=turn, message_id=mid, parent_id=_text(group.iloc[0]["parent_id"]),
                                    role="assistant", content=[_block(r) for r in group.itertuples()],
                                    ts=_epoch(group.iloc[0]["ts"])))
        for call in rows["tool_calls"].itertuples():
            data = json.loads(call.input_json or "{}")
            publish(ToolCallStarted(turn=turn, call_id=call.call_id, tool_index=int(call.tool_index),
                                    name=call.tool_name, input=data, ts=_epoch(call.started_at)))
            publish(ToolCallFinished(turn=turn, call_id=call.call_id, tool_index=int(call.tool_index),
                                     name=call.tool_name, input=data, output=_text(call.output_text),
                                     is_error=bool(call.is_error), started_at=_epoch(call.started_at),
                                     duration_s=float(call.duration_s or 0.0), ts=_epoch(call.ended_at)))
        tool_index = int(rows["tool_calls"]["tool_index"].max()) if len(rows["tool_calls"]) else turn
        evaluations = rows["evaluations"]
        for eval_id, group in evaluations.groupby("eval_id", sort=False):
            self._publish_run(turn, tool_index, eval_id, group)
        for q in rows["interventions"].itertuples():
            publish(InterventionFired(turn=turn, tool_index=int(q.tool_index), intervention_id=q.intervention_id,
                                      trigger=q.trigger, source=q.source, question_id=_text(q.question_id),
                                      text=q.question_text, layer=_text(q.layer), reason="",
                                      best_before=_finite(q.best_speedup_before), ts=_epoch(q.ts)))
        for mid, group in by_message.items():
            if group.iloc[0]["role"] == "user":
                human = [i for i, h in enumerate(group["is_human"]) if h]
                publish(MessageDone(turn=turn, message_id=mid, parent_id=_text(group.iloc[0]["parent_id"]),
                                    role="user", content=[_block(r) for r in group.itertuples()],
                                    human_block=human[0] if human else None, ts=_epoch(group.iloc[0]["ts"])))
        publish(TurnCommitted(turn=turn, tool_index=tool_index, tokens=0, cost_usd=0.0))

    def _publish_run(self, turn: int, tool_index: int, eval_id: str, group) -> None:
        first = group.iloc[0]
        request = SimpleNamespace(suite=first["suite"], kernel_path=f"artifacts/{first['kernel_sha']}.cu",
                                  stop_expr=self.config.stop_expr)
        result = result_from_rows(group, request)
        self.main_anchor = _text(first.get("main_anchor")) or LEGACY_MAIN     # rows written before it: attention's
        new_best = self.policy.on_result(result, self.main_anchor, {"original": self.best[0],
                                                                     self.main_anchor: self.best[3]})
        g_orig, g_fa3 = _finite(first["geomean_vs_original"]), _finite(first["geomean_vs_fa3"])
        g_main = finite(first.get("geomean_vs_main"))      # null in older rows: the event takes FA3's
        if new_best:
            self.best = (g_orig, g_fa3, first["kernel_sha"], g_main)
        self.stop_met = bool(result.stop_met)
        self.bus.publish(EvaluationDone(turn=turn, call_id=_text(first["call_id"]), tool_index=tool_index,
                                        eval_id=eval_id, kernel_sha=first["kernel_sha"], result=result,
                                        geomean_vs_original=g_orig, geomean_vs_fa3=g_fa3,
                                        best_vs_original=self.best[0], best_vs_fa3=self.best[1],
                                        is_new_best=new_best, main_anchor=self.main_anchor, geomean_vs_main=g_main,
                                        best_vs_main=self.best[3], ts=_epoch(first["ts"])))


def _block(row) -> dict:
    """A messages row back to its content block."""
    if row.block_type == "tool_use":
        try:
            data = json.loads(_text(row.text) or "{}")
        except ValueError:
            data = {}
        return {"type": "tool_use", "id": _text(row.tool_use_id), "name": _text(row.tool_name), "input": data}
    if row.block_type == "tool_result":
        return {"type": "tool_result", "tool_use_id": _text(row.tool_use_id), "content": _text(row.text)}
    return {"type": "text", "text": _text(row.text)}


def watch(campaign_dir: str | Path, poll_s: float = POLL_S, hz: float = 10.0):
    """(a CampaignController following the campaign at `campaign_dir`, not started; a one-line note)."""
    from workbench.ui.controller import CampaignController
    from workbench.ui.render import DEMO_LABEL

    watcher = CampaignWatcher(campaign_dir, poll_s=poll_s)
    config = watcher.ws.read_config()
    label = DEMO_LABEL if config.get("evaluator") == "standin" else ""
    note = (f"watching campaign {watcher.ws.campaign_id} ({watcher.config.mode}, suite {watcher.config.suite}) at "
            f"{watcher.ws.root}: every call its agent makes appears here; your questions go to its inbox")
    return CampaignController(watcher, demo_label=label, hz=hz), note


DEMO_KERNEL = "// a stand-in kernel for the watching demo\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\n"
DEMO_STEPS = (("kernel.cu", {}), ("kernel.cu", {"notes": "timing it again"}),
              ("kernel.cu", {"claim": "the key loop is at the memory limit"}),
              ("kernel.cu", {"edit": ("KEY_TILE 8 ", "KEY_TILE 16 "), "notes": "KEY_TILE 8 -> 16"}))


def watch_demo(root: str | Path, pace_s: float = 1.0, poll_s: float = 0.25):
    """(controller, note) watching a fresh stand-in campaign under `root` that a thread plays four calls into, as
    an outside agent would: two re-timings, a claim, then a kernel that meets the stop condition."""
    from workbench.evaluators.standin_timings import KnobEvaluator
    from workbench.questions.policy import PolicyConfig

    Path(root).mkdir(parents=True, exist_ok=True)
    config = CampaignConfig(suite="smoke", mode="hybrid", stop_expr="all_correct and geomean_vs_original >= 1.3",
                            root=str(root), campaign_id=f"watch-demo-{time.strftime('%Y%m%d-%H%M%S')}",
                            policy=PolicyConfig(stall_runs=2))
    service = CampaignService.create(config, evaluator=KnobEvaluator(), kernel_text=DEMO_KERNEL)
    service.ws.write_config(service.ws.read_config() | {"evaluator": "standin"})

    def agent():
        try:
            with service.session("demo"):
                for path, step in DEMO_STEPS:
                    time.sleep(pace_s)
                    if "edit" in step:
                        old, new = step["edit"]
                        service.ws.kernel_path.write_text(service.ws.kernel_path.read_text().replace(old, new))
                    service.check(path, notes=step.get("notes", ""), claim=step.get("claim", ""))
        except Exception:               # a thread's error is otherwise silent: the widgets would just wait
            log.exception("watch demo: the scripted agent stopped")
    threading.Thread(target=agent, name="watch-demo-agent", daemon=True).start()
    app, _ = watch(service.ws.root, poll_s=poll_s)
    return app, (f"watching {service.ws.campaign_id}, a demo campaign (CPU stand-in timings, not measurements) that "
                 "a scripted agent checks four times; point WATCH at campaigns/<id> to follow your own agent")
