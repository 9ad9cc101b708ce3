"""The campaign's view model: what the widgets show, updated from campaign events (no widgets, no threads).

    model = CampaignModel(demo_label="")
    model.apply(event)                  # a campaign event, or ("asked", text, clear) / ("stop_requested",)
    model.dirty, model.dirty_items      # what changed since the controller last drew: it clears them

The controller (controller.py) applies events on its UI thread and draws from this model; tests can drive the
model alone. Items are the chat's entries (key -> {"html", "widget"}), oldest first in `order`.
"""
from __future__ import annotations

from typing import Optional

import pandas as pd

from workbench.campaign.events import (CampaignStarted, CampaignStopped, EvaluationDone, InterventionFired,
                                       MessageDelta, MessageDone, Notice, ToolCallFinished, ToolCallStarted,
                                       TriggerDetected, TurnCommitted, TurnStarted)
from workbench.ui import render


class CampaignModel:
    def __init__(self, demo_label: str = ""):
        self.demo_label = demo_label
        self.stopped = None
        self.items: dict = {}               # key -> {"html": str, "widget": HTML or None}
        self.order: list = []               # item keys, oldest first
        self.turns: dict = {}
        self.status: dict = {"phase": "not started", "turn": 0, "tool_calls": 0, "runs": 0, "questions": 0}
        self.runs: list = []                # one dict per harness run
        self.marks: list = []               # one dict per question put to the agent
        self.frame: Optional[pd.DataFrame] = None        # latest harness run, one row per scenario
        self.best_frame: Optional[pd.DataFrame] = None   # best all-correct run
        self.last_result = self.best_result = None
        self.best_sha = ""
        self.trigger = ""
        self.pending = 0
        self.dirty_items: set = set()
        self.dirty: set = set()             # "order", "status", "table", "progress", "best", "controls", ...
        self.clear_input = False

    def _add_item(self, key, html: str) -> None:
        self.items[key] = {"html": html, "widget": None}
        self.order.append(key)
        self.dirty_items.add(key)
        self.dirty.add("order")

    def _set_item(self, key, html: str) -> None:
        if key in self.items and self.items[key]["html"] != html:
            self.items[key]["html"] = html
            self.dirty_items.add(key)

    def _drop_item(self, key) -> None:
        self.items.pop(key, None)
        self.order.remove(key)
        self.dirty_items.discard(key)
        self.dirty.add("order")

    def _turn(self, n: int) -> dict:
        if n not in self.turns:
            self.turns[n] = {"turn": n, "text": {}, "final": False, "tools": {}, "notes": [], "questions": [],
                             "trigger": None}
            self._add_item(("turn", n), render.turn_html(self.turns[n]))
        return self.turns[n]

    def _touch(self, turn: dict) -> None:
        self._set_item(("turn", turn["turn"]), render.turn_html(turn))

    def _phase(self, text: str) -> None:
        self.status["phase"] = text
        self.dirty.add("status")

    def apply(self, e) -> None:
        """Apply one campaign event (or a local tuple from the controller) to the model."""
        s = self.status
        if isinstance(e, tuple):
            self._apply_local(e)
        elif isinstance(e, CampaignStarted):
            s.update(campaign_id=e.campaign_id, mode=e.mode, agent=e.agent + (f" ({e.model})" if e.model else ""),
                     suite=e.suite, turn=e.turn, main_anchor=e.main_anchor)
            self._add_item(("start",), render.started_html(e.to_dict()))
            self._phase("starting")
        elif isinstance(e, TurnStarted):
            self._turn(e.turn)
            s["turn"] = e.turn
            self._phase(f"agent is writing · turn {e.turn}")
        elif isinstance(e, MessageDelta):
            turn = self._turn(e.turn)
            if not turn["final"]:
                turn["text"][e.block_index] = turn["text"].get(e.block_index, "") + e.text
                self._touch(turn)
        elif isinstance(e, MessageDone):
            self._message_done(e)
        elif isinstance(e, ToolCallStarted):
            turn = self._turn(e.turn)
            turn["tools"][e.call_id] = {"name": e.name, "input": e.input, "tool_index": e.tool_index}
            s["tool_calls"] = e.tool_index
            self._touch(turn)
            self._phase(f"running {e.name} · tool call {e.tool_index}")
        elif isinstance(e, ToolCallFinished):
            turn = self._turn(e.turn)
            call = turn["tools"].setdefault(e.call_id, {"name": e.name, "input": e.input, "tool_index": e.tool_index})
            call.update(output=e.output, is_error=e.is_error, duration_s=e.duration_s)
            self._touch(turn)
            self._phase(f"agent is reading results · turn {e.turn}")
        elif isinstance(e, EvaluationDone):
            self._evaluation(e)
        elif isinstance(e, TriggerDetected):
            turn = self._turn(e.turn)
            turn["trigger"] = {"trigger": e.trigger, "reason": e.reason}
            self.trigger = e.trigger
            self.dirty.add("controls")
        elif isinstance(e, InterventionFired):
            self._intervention(e)
        elif isinstance(e, TurnCommitted):
            turn = self._turn(e.turn)
            if turn["trigger"] and not turn["questions"]:
                t = turn["trigger"]
                turn["notes"].append({"text": f"trigger {t['trigger']}: {t['reason']} — no question asked "
                                              f"(mode {s.get('mode', '?')})", "level": "info"})
                self._touch(turn)
            s.update(tokens=e.tokens, cost_usd=e.cost_usd)
            if not s.get("stopping"):
                self._phase(f"between turns · {e.turn} done")
        elif isinstance(e, Notice):
            key = ("notice", len(self.items))
            self._add_item(key, render.note_html(e.text, e.level))
        elif isinstance(e, CampaignStopped):
            self.stopped = e
            s.update(turn=e.turn, tool_calls=e.tool_calls, best_vs_original=e.best_vs_original,
                     best_vs_fa3=e.best_vs_fa3, tokens=e.tokens, cost_usd=e.cost_usd, stopped=True,
                     main_anchor=e.main_anchor, best_vs_main=e.best_vs_main)
            for key in [k for k in self.order if k[0] == "pending"]:
                self._set_item(key, render.pending_html(self.items[key]["text"], "undelivered"))
            for n in [n for n, t in self.turns.items() if not t["final"] and not any(
                    (t["text"], t["tools"], t["notes"], t["questions"]))]:
                self._drop_item(("turn", n))     # a turn the agent never answered: the campaign ended first
                del self.turns[n]
            self._add_item(("stop",), render.stopped_html(e.to_dict()))
            self._phase(f"stopped: {render.stop_reason(e.reason)}")
            self.dirty.add("controls")

    def _apply_local(self, e: tuple) -> None:
        kind = e[0]
        if kind == "asked":
            self.pending += 1
            key = ("pending", self.pending)
            self._add_item(key, render.pending_html(e[1]))
            self.items[key]["text"] = e[1]
            if e[2]:
                self.clear_input = True
                self.dirty.add("controls")
        elif kind == "stop_requested" and not self.stopped:
            self.status["stopping"] = True
            self._phase("stopping at the next turn boundary")
            self.dirty.add("controls")

    def _message_done(self, e: MessageDone) -> None:
        turn = self._turn(e.turn)
        if e.role == "assistant":
            turn["text"] = {i: b.get("text", "") for i, b in enumerate(e.content) if b.get("type") == "text"}
            turn["final"] = True
            if e.usage is not None:
                self.status["tokens"] = self.status.get("tokens", 0) + e.usage.total
                self.dirty.add("status")
        else:
            asked = {q["text"] for q in turn["questions"]}
            for i, block in enumerate(e.content):
                if block.get("type") == "text" and i != e.human_block and block.get("text") not in asked:
                    turn["notes"].append({"text": f"to the agent: {block['text']}", "level": "info"})
        self._touch(turn)

    def _evaluation(self, e: EvaluationDone) -> None:
        result = e.result
        frame = result.to_frame()
        counts = result.counts()
        self.last_result, self.frame = result, frame
        if e.is_new_best:
            self.best_result, self.best_frame, self.best_sha = result, frame, e.kernel_sha
            self.dirty.add("best")
        if render.is_standin(result.gpu) and not self.demo_label:
            self.demo_label = render.DEMO_LABEL
            self.dirty.add("demo")
        run = {"run": len(self.runs) + 1, "tool_index": e.tool_index, "turn": e.turn, "kernel_sha": e.kernel_sha,
               "geomean_vs_original": e.geomean_vs_original, "geomean_vs_fa3": e.geomean_vs_fa3,
               "main_anchor": e.main_anchor, "geomean_vs_main": e.geomean_vs_main,
               "all_correct": bool(result.all_correct), "best": e.best_vs_original, "is_new_best": e.is_new_best,
               "counts": counts, "n_failed": counts.get("failed", 0), "flags": list(result.flags),
               "retimed_best": not e.is_new_best and bool(self.best_sha) and e.kernel_sha == self.best_sha}
        self.runs.append(run)
        turn = self._turn(e.turn)
        if e.call_id in turn["tools"]:
            turn["tools"][e.call_id]["evaluation"] = run
            self._touch(turn)
        self.status.update(runs=len(self.runs), best_vs_original=e.best_vs_original, best_vs_fa3=e.best_vs_fa3,
                           main_anchor=e.main_anchor, best_vs_main=e.best_vs_main)
        self.dirty.update({"status", "table", "progress"})

    def _intervention(self, e: InterventionFired) -> None:
        turn = self._turn(e.turn)
        q = e.to_dict()
        turn["questions"].append(q)
        self.marks.append({"x": e.tool_index, "trigger": "human" if e.source == "human" else e.trigger,
                           "label": e.question_id or ("person" if e.source == "human" else "")})
        if e.source == "human":     # the person's waiting question has been delivered: it shows as a banner now
            for key in [k for k in self.order if k[0] == "pending"]:
                if self.items[key].get("text") == e.text:
                    self._remove_item(key)
                    break
        self.status["questions"] = len(self.marks)
        self._touch(turn)
        self.dirty.update({"status", "progress"})

    def _remove_item(self, key) -> None:
        item = self.items.pop(key)
        self.order.remove(key)
        self.dirty_items.discard(key)
        if item["widget"] is not None:
            item["widget"].close()
        self.dirty.add("order")

    def runs_frame(self) -> pd.DataFrame:
        """One row per harness run so far: tool call, geomeans (x_original and x_<main anchor>: x_fa3, x_cublas),
        best so far, failures, flags, the question after it."""
        rows = []
        for r in self.runs:
            asked = [m for m in self.marks if m["x"] == r["tool_index"]]
            rows.append({"run": r["run"], "turn": r["turn"], "tool_call": r["tool_index"],
                         "kernel": r["kernel_sha"][:12], "x_original": r["geomean_vs_original"],
                         f"x_{r['main_anchor']}": r["geomean_vs_main"], "all_correct": r["all_correct"],
                         "failing": r["n_failed"],
                         "best_so_far": r["best"], "new_best": r["is_new_best"], "flags": ",".join(r["flags"]),
                         "question": ", ".join(f"{m['label']} ({m['trigger']})" for m in asked)})
        return pd.DataFrame(rows)
