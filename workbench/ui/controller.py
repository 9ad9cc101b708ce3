"""The controller: runs a Campaign on its worker thread and turns its events into widget updates.

    app = CampaignController(campaign)       # builds a CampaignView unless one is given
    display(app)                             # in a notebook cell (main thread)
    app.start()                              # the campaign runs on its own thread; the cell returns at once
    app.wait()                               # optional: block until it stopped (scripts, tests, CI)

Threads, following the field notes on ipywidgets 8 / ipykernel 7 / JupyterLab 4:
  * the campaign thread publishes events; our subscriber only puts them on a queue;
  * button callbacks (which JupyterLab may run on a subshell thread) only enqueue too: the inbox
    (`campaign.ask`), the stop flag (`campaign.stop`) and this controller's queue;
  * one UI thread drains the queue and is the only code that changes widget values. It applies events to a
    plain model, and at most `hz` times a second (10 by default) sends what changed, inside `hold_sync()`,
    so streamed text costs a handful of messages a second however fast it arrives. Figures are drawn with
    matplotlib's object API into PNG bytes for Image widgets: no pyplot, no `display()`, no `with output:`.
"""
from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import traceback
from typing import Optional

import ipywidgets as w
import pandas as pd

from workbench import plots
from workbench.agent.events import (CampaignStarted, CampaignStopped, EvaluationDone, InterventionFired,
                                    MessageDelta, MessageDone, Notice, ToolCallFinished, ToolCallStarted,
                                    TriggerDetected, TurnCommitted, TurnStarted)
from workbench.agent.loop import problem_ceiling
from workbench.ui import render
from workbench.ui.views import CampaignView, bank_options

log = logging.getLogger(__name__)
MAX_TRANSCRIPT_ITEMS = 300          # older turns leave the chat (the trace tables keep everything)
DEFAULT_CEILING = 790.0


class CampaignController:
    def __init__(self, campaign, view: Optional[CampaignView] = None, *, bank=None, demo_label: str = "",
                 hz: float = 10.0, figures: bool = True, ceiling_tflops: Optional[float] = None):
        self.campaign = campaign
        self.bank = list(bank if bank is not None else getattr(campaign.policy, "bank", []))
        self.view = view or CampaignView(self.bank, demo_label)
        self.demo_label = demo_label
        self.period = 1.0 / hz
        self.figures = figures
        self.ceiling_tflops = ceiling_tflops or problem_ceiling().get("ceiling_tflops", DEFAULT_CEILING)
        self.done = threading.Event()
        self.stopped: Optional[CampaignStopped] = None
        self.errors: list[str] = []
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._campaign_thread: Optional[threading.Thread] = None
        self._unsubscribe = None
        # the model the UI thread keeps; widgets are drawn from it
        self.items: dict = {}               # key -> {"html": str, "widget": HTML or None}
        self.order: list = []               # item keys, oldest first
        self.turns: dict = {}
        self.status: dict = {"phase": "not started", "turn": 0, "tool_calls": 0, "runs": 0, "questions": 0}
        self.runs: list = []                # one dict per harness run
        self.marks: list = []               # one dict per question put to the agent
        self.frame: Optional[pd.DataFrame] = None        # latest harness run, one row per scenario
        self.best_frame: Optional[pd.DataFrame] = None   # best all-correct run
        self.last_result = self.best_result = None
        self.trigger = ""
        self._pending = 0
        self._dirty_items: set = set()
        self._dirty: set = set()            # "order", "status", "table", "progress", "best", "controls", ...
        self._clear_input = False
        self._dropped = 0
        self.view.send.on_click(self._on_send)
        self.view.stop.on_click(self._on_stop)
        self.view.ask_bank.on_click(self._on_ask_bank)

    # ---- the public API -----------------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe, start the UI thread, then the campaign's worker thread. (Returns None, so that a cell
        ending in `app.start()` does not display the widgets a second time.)"""
        if self._thread is not None:
            return
        self._unsubscribe = self.campaign.subscribe(self._queue.put)
        self._thread = threading.Thread(target=self._pump, name="campaign-ui", daemon=True)
        self._thread.start()
        self._campaign_thread = self.campaign.start()

    def ask(self, text: str, question_id: str = "", clear_input: bool = False) -> bool:
        """Put a person's question in the campaign's inbox (any thread). False when the mode takes none."""
        text = (text or "").strip()
        if not text:
            return False
        accepted = self.campaign.ask(text, question_id)
        if accepted:
            self._queue.put(("asked", text, clear_input))
        return accepted

    def stop(self) -> None:
        """End the campaign at the next turn boundary (any thread)."""
        self.campaign.stop()
        self._queue.put(("stop_requested",))

    def wait(self, timeout: Optional[float] = None) -> Optional[CampaignStopped]:
        """Block until the campaign stopped and the widgets show it; the CampaignStopped event (None on timeout)."""
        self.done.wait(timeout)
        return self.stopped

    @property
    def is_replay(self) -> bool:
        return str(getattr(self.campaign.config, "agent", "")).startswith("replay:")

    def runs_frame(self) -> pd.DataFrame:
        """One row per harness run so far: tool call, geomeans, best so far, failures, flags, the question after it."""
        rows = []
        for r in self.runs:
            asked = [m for m in self.marks if m["x"] == r["tool_index"]]
            rows.append({"run": r["run"], "turn": r["turn"], "tool_call": r["tool_index"],
                         "kernel": r["kernel_sha"][:12], "x_original": r["geomean_vs_original"],
                         "x_fa3": r["geomean_vs_fa3"], "all_correct": r["all_correct"], "failing": r["n_failed"],
                         "best_so_far": r["best"], "new_best": r["is_new_best"], "flags": ",".join(r["flags"]),
                         "question": ", ".join(f"{m['label']} ({m['trigger']})" for m in asked)})
        return pd.DataFrame(rows)

    def close(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()

    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    # ---- widget callbacks: enqueue only --------------------------------------------------------------
    def _on_send(self, _button) -> None:
        self.ask(self.view.input.value, clear_input=True)

    def _on_stop(self, _button) -> None:
        self.stop()

    def _on_ask_bank(self, _button) -> None:
        question = next((q for q in self.bank if q.id == self.view.bank_pick.value), None)
        if question is not None:
            self.ask(question.text, question.id)

    # ---- the UI thread -------------------------------------------------------------------------------
    def _pump(self) -> None:
        last_flush = 0.0
        finished = False
        while True:
            wait = self.period - (time.monotonic() - last_flush) if self._dirty or self._dirty_items else 0.5
            try:
                batch = [self._queue.get(timeout=max(0.005, wait))]
            except queue.Empty:
                batch = []
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for item in batch:
                try:
                    self._apply(item)
                except Exception as err:    # one bad event must not take the UI down
                    self._ui_error("applying", item, err)
                finished = finished or isinstance(item, CampaignStopped)
            if (self._dirty or self._dirty_items) and (finished or time.monotonic() - last_flush >= self.period):
                try:
                    self._flush()
                except Exception as err:
                    self._ui_error("drawing", None, err)
                last_flush = time.monotonic()
            if finished and not self._dirty and not self._dirty_items and self._queue.empty():
                break
        self.done.set()

    def _ui_error(self, what: str, item, err: Exception) -> None:
        line = f"UI error while {what} {type(item).__name__ if item is not None else ''}: {type(err).__name__}: {err}"
        log.error("%s\n%s", line, traceback.format_exc())
        self.errors.append(line)
        self._add_item(("uierror", len(self.errors)), render.note_html(line, "error"))

    # ---- the model -----------------------------------------------------------------------------------
    def _add_item(self, key, html: str) -> None:
        self.items[key] = {"html": html, "widget": None}
        self.order.append(key)
        self._dirty_items.add(key)
        self._dirty.add("order")

    def _set_item(self, key, html: str) -> None:
        if key in self.items and self.items[key]["html"] != html:
            self.items[key]["html"] = html
            self._dirty_items.add(key)

    def _drop_item(self, key) -> None:
        self.items.pop(key, None)
        self.order.remove(key)
        self._dirty_items.discard(key)
        self._dirty.add("order")

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
        self._dirty.add("status")

    def _apply(self, e) -> None:
        s = self.status
        if isinstance(e, tuple):
            self._apply_local(e)
        elif isinstance(e, CampaignStarted):
            s.update(campaign_id=e.campaign_id, mode=e.mode, agent=e.agent + (f" ({e.model})" if e.model else ""),
                     suite=e.suite, turn=e.turn)
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
            self._dirty.add("controls")
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
                     best_vs_fa3=e.best_vs_fa3, tokens=e.tokens, cost_usd=e.cost_usd, stopped=True)
            for key in [k for k in self.order if k[0] == "pending"]:
                self._set_item(key, render.pending_html(self.items[key]["text"], "undelivered"))
            for n in [n for n, t in self.turns.items() if not t["final"] and not any(
                    (t["text"], t["tools"], t["notes"], t["questions"]))]:
                self._drop_item(("turn", n))     # a turn the agent never answered: the campaign ended first
                del self.turns[n]
            self._add_item(("stop",), render.stopped_html(e.to_dict()))
            self._phase(f"stopped: {render.stop_reason(e.reason)}")
            self._dirty.add("controls")

    def _apply_local(self, e: tuple) -> None:
        kind = e[0]
        if kind == "asked":
            self._pending += 1
            key = ("pending", self._pending)
            self._add_item(key, render.pending_html(e[1]))
            self.items[key]["text"] = e[1]
            if e[2]:
                self._clear_input = True
                self._dirty.add("controls")
        elif kind == "stop_requested" and not self.stopped:
            self.status["stopping"] = True
            self._phase("stopping at the next turn boundary")
            self._dirty.add("controls")

    def _message_done(self, e: MessageDone) -> None:
        turn = self._turn(e.turn)
        if e.role == "assistant":
            turn["text"] = {i: b.get("text", "") for i, b in enumerate(e.content) if b.get("type") == "text"}
            turn["final"] = True
            if e.usage is not None:
                self.status["tokens"] = self.status.get("tokens", 0) + e.usage.total
                self._dirty.add("status")
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
            self.best_result, self.best_frame = result, frame
            self._dirty.add("best")
        if render.is_standin(result.gpu) and not self.demo_label:
            self.demo_label = render.DEMO_LABEL
            self._dirty.add("demo")
        run = {"run": len(self.runs) + 1, "tool_index": e.tool_index, "turn": e.turn, "kernel_sha": e.kernel_sha,
               "geomean_vs_original": e.geomean_vs_original, "geomean_vs_fa3": e.geomean_vs_fa3,
               "all_correct": bool(result.all_correct), "best": e.best_vs_original, "is_new_best": e.is_new_best,
               "counts": counts, "n_failed": counts.get("failed", 0), "flags": list(result.flags)}
        self.runs.append(run)
        turn = self._turn(e.turn)
        if e.call_id in turn["tools"]:
            turn["tools"][e.call_id]["evaluation"] = run
            self._touch(turn)
        self.status.update(runs=len(self.runs), best_vs_original=e.best_vs_original, best_vs_fa3=e.best_vs_fa3)
        self._dirty.update({"status", "table", "progress"})

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
        self._dirty.update({"status", "progress"})

    def _remove_item(self, key) -> None:
        item = self.items.pop(key)
        self.order.remove(key)
        self._dirty_items.discard(key)
        if item["widget"] is not None:
            item["widget"].close()
        self._dirty.add("order")

    # ---- drawing (UI thread only) ----------------------------------------------------------------------
    def _flush(self) -> None:
        v = self.view
        dirty, self._dirty = self._dirty, set()
        dirty_items, self._dirty_items = self._dirty_items, set()
        with contextlib.ExitStack() as stack:
            hold = lambda widget: stack.enter_context(widget.hold_sync())      # noqa: E731
            for key in dirty_items:
                item = self.items.get(key)
                if item is None:
                    continue
                if item["widget"] is None:
                    item["widget"] = w.HTML(item["html"], layout=w.Layout(flex="0 0 auto", width="auto"))
                    item["widget"].add_class("wb-item-widget")
                else:
                    hold(item["widget"])
                    item["widget"].value = item["html"]
            if "order" in dirty:
                self._trim()
                hold(v.transcript)
                v.transcript.children = tuple(self.items[k]["widget"] for k in reversed(self.order))
            if dirty & {"status", "order"}:
                hold(v.status)
                v.status.value = f'<div class="wb-root">{render.status_html(self.status)}</div>'
            if "demo" in dirty:
                hold(v.demo)
                v.demo.value = f'<div class="wb-root wb-demo">{render.esc(self.demo_label)}</div>'
                v.demo.layout.display = ""
            if "table" in dirty:
                hold(v.table)
                v.table.value = (f'<div class="wb-root">'
                                 f'{render.table_html(self.frame, render.run_head(self.runs[-1]))}</div>')
            if "controls" in dirty:
                self._draw_controls(hold)
            if self.figures and "progress" in dirty:
                self._draw_progress(hold)
            if self.figures and "best" in dirty:
                self._draw_best(hold)

    def _trim(self) -> None:
        turns = [k for k in self.order if k[0] == "turn"]
        while len(self.order) > MAX_TRANSCRIPT_ITEMS and len(turns) > 1:
            self._remove_item(turns.pop(0))
            self._dropped += 1
        if self._dropped:
            html = render.note_html(f"{self._dropped} earlier turns are no longer shown here; the campaign's trace "
                                    "tables keep everything.")
            if ("dropped",) not in self.items:
                self.items[("dropped",)] = {"html": html, "widget": w.HTML(html)}
                self.order.insert(0, ("dropped",))
            else:
                self.items[("dropped",)]["widget"].value = html

    def _draw_controls(self, hold) -> None:
        v = self.view
        if self._clear_input:
            hold(v.input)
            v.input.value = ""
            self._clear_input = False
        trigger = self.trigger
        label = f"bank questions for: <b>{render.esc(trigger)}</b> (latest trigger) and any" if trigger else \
            "bank questions for: any trigger"
        hold(v.trigger)
        v.trigger.value = f'<span class="wb-legend">{label}</span>'
        options = bank_options(self.bank, trigger)
        if [o[1] for o in options] != [o[1] for o in v.bank_pick.options]:
            hold(v.bank_pick)
            v.bank_pick.options = options
        if self.stopped is not None or self.status.get("stopping"):
            for control in ([v.stop] if self.stopped is None else v.controls):
                hold(control)
                control.disabled = True

    def _footer(self, result) -> str:
        return render.footer_text(result.gpu, result.versions, result.suite, result.kernel_sha)

    def _draw_progress(self, hold) -> None:
        runs = pd.DataFrame([{"x": r["tool_index"], "geomean": r["geomean_vs_original"] if r["geomean_vs_original"]
                              is not None else float("nan"), "all_correct": r["all_correct"],
                              "best": r["best"] if r["best"] is not None else float("nan")} for r in self.runs],
                            columns=["x", "geomean", "all_correct", "best"])
        marks = pd.DataFrame(self.marks, columns=["x", "trigger", "label"])
        result = self.last_result
        footer = self._footer(result) if result is not None else "no harness run yet"
        png = plots.to_png(plots.campaign_progress(runs, marks, footer=footer,
                                                   title="Best geomean so far, questions marked by trigger"))
        hold(self.view.progress)
        self.view.progress.value = png

    def _draw_best(self, hold) -> None:
        result, frame = self.best_result, self.best_frame
        if result is None or frame is None or not len(frame):
            return
        footer = self._footer(result)
        sha = result.kernel_sha[:12]
        anchors = plots.to_png(plots.scenario_tflops(frame, footer=footer, candidate_label=f"best candidate {sha}",
                                                     title=f"TFLOP/s per scenario: best candidate {sha} against "
                                                           "the anchors"))
        ceiling = plots.to_png(plots.ceiling_fraction(frame, footer=footer, ceiling_tflops=self.ceiling_tflops,
                                                      title="Best candidate, % of the measured ceiling"))
        hold(self.view.anchors)
        hold(self.view.ceiling)
        self.view.anchors.value = anchors
        self.view.ceiling.value = ceiling
