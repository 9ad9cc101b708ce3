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
from workbench.campaign.config import problem_ceiling
from workbench.campaign.events import CampaignStopped
from workbench.ui import render
from workbench.ui.campaign_view import CampaignView, bank_options, show_image
from workbench.ui.model import CampaignModel

log = logging.getLogger(__name__)
MAX_TRANSCRIPT_ITEMS = 300          # older turns leave the chat (the trace tables keep everything)
DEFAULT_CEILING = 790.0


class CampaignController:
    def __init__(self, campaign, view: Optional[CampaignView] = None, *, bank=None, demo_label: str = "",
                 hz: float = 10.0, figures: bool = True, ceiling_tflops: Optional[float] = None):
        self.campaign = campaign
        self.bank = list(bank if bank is not None else getattr(campaign.policy, "bank", []))
        self.view = view or CampaignView(self.bank, demo_label)
        self.period = 1.0 / hz
        self.figures = figures
        self.ceiling_tflops = ceiling_tflops or problem_ceiling().get("ceiling_tflops", DEFAULT_CEILING)
        self.done = threading.Event()
        self.errors: list[str] = []
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._campaign_thread: Optional[threading.Thread] = None
        self._unsubscribe = None
        self.model = CampaignModel(demo_label)     # what the widgets show; only the UI thread changes it
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

    # the model's state, read by notebooks and tests
    stopped = property(lambda self: self.model.stopped)
    status = property(lambda self: self.model.status)
    frame = property(lambda self: self.model.frame)
    best_frame = property(lambda self: self.model.best_frame)
    trigger = property(lambda self: self.model.trigger)
    runs = property(lambda self: self.model.runs)
    demo_label = property(lambda self: self.model.demo_label)
    items = property(lambda self: self.model.items)
    order = property(lambda self: self.model.order)
    marks = property(lambda self: self.model.marks)

    @property
    def is_replay(self) -> bool:
        return str(getattr(self.campaign.config, "agent", "")).startswith("replay:")

    def runs_frame(self) -> pd.DataFrame:
        """One row per harness run so far (numbers as numbers; `runs_table()` is the readable view)."""
        return self.model.runs_frame()

    def runs_table(self) -> "render.HtmlTable":
        """The runs so far as a table a person reads: '–' where nothing was measured, yes/no, × figures."""
        return render.HtmlTable(render.runs_table_html(self.model.runs_frame()))

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
            wait = self.period - (time.monotonic() - last_flush) if self.model.dirty or self.model.dirty_items else 0.5
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
                    self.model.apply(item)
                except Exception as err:    # one bad event must not take the UI down
                    self._ui_error("applying", item, err)
                finished = finished or isinstance(item, CampaignStopped)
            m = self.model
            if (m.dirty or m.dirty_items) and (finished or time.monotonic() - last_flush >= self.period):
                try:
                    self._flush()
                except Exception as err:
                    self._ui_error("drawing", None, err)
                last_flush = time.monotonic()
            if finished and not m.dirty and not m.dirty_items and self._queue.empty():
                break
        self.done.set()

    def _ui_error(self, what: str, item, err: Exception) -> None:
        line = f"UI error while {what} {type(item).__name__ if item is not None else ''}: {type(err).__name__}: {err}"
        log.error("%s\n%s", line, traceback.format_exc())
        self.errors.append(line)
        self.model._add_item(("uierror", len(self.errors)), render.note_html(line, "error"))

    # ---- drawing (UI thread only) ----------------------------------------------------------------------
    def _flush(self) -> None:
        v, m = self.view, self.model
        dirty, m.dirty = m.dirty, set()
        dirty_items, m.dirty_items = m.dirty_items, set()
        with contextlib.ExitStack() as stack:
            hold = lambda widget: stack.enter_context(widget.hold_sync())      # noqa: E731
            for key in dirty_items:
                item = m.items.get(key)
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
                v.transcript.children = tuple(m.items[k]["widget"] for k in reversed(m.order))
            if dirty & {"status", "order"}:
                hold(v.status)
                v.status.value = f'<div class="wb-root">{render.status_html(m.status)}</div>'
            if "demo" in dirty:
                hold(v.demo)
                v.demo.value = f'<div class="wb-root wb-demo">{render.esc(m.demo_label)}</div>'
                v.demo.layout.display = ""
            if "table" in dirty:
                hold(v.table)
                v.table.value = (f'<div class="wb-root">'
                                 f'{render.table_html(m.frame, render.run_head(m.runs[-1]), m.runs[-1]["main_anchor"])}'
                                 '</div>')
            if "controls" in dirty:
                self._draw_controls(hold)
            if self.figures and "progress" in dirty:
                self._draw_progress(hold)
            if self.figures and "best" in dirty:
                self._draw_best(hold)

    def _trim(self) -> None:
        m = self.model
        turns = [k for k in m.order if k[0] == "turn"]
        while len(m.order) > MAX_TRANSCRIPT_ITEMS and len(turns) > 1:
            m._remove_item(turns.pop(0))
            self._dropped += 1
        if self._dropped:
            html = render.note_html(f"{self._dropped} earlier turns are no longer shown here; the campaign's trace "
                                    "tables keep everything.")
            if ("dropped",) not in m.items:
                m.items[("dropped",)] = {"html": html, "widget": w.HTML(html)}
                m.order.insert(0, ("dropped",))
            else:
                m.items[("dropped",)]["widget"].value = html

    def _draw_controls(self, hold) -> None:
        v, m = self.view, self.model
        if m.clear_input:
            hold(v.input)
            v.input.value = ""
            m.clear_input = False
        trigger = m.trigger
        label = f"bank questions for: <b>{render.esc(trigger)}</b> (latest trigger) and any" if trigger else \
            "bank questions for: any trigger"
        hold(v.trigger)
        v.trigger.value = f'<span class="wb-legend">{label}</span>'
        options = bank_options(self.bank, trigger)
        if [o[1] for o in options] != [o[1] for o in v.bank_pick.options]:
            hold(v.bank_pick)
            v.bank_pick.options = options
        if m.stopped is not None or m.status.get("stopping"):
            for control in ([v.stop] if m.stopped is None else v.controls):
                hold(control)
                control.disabled = True

    def _footer(self, result) -> str:
        return render.footer_text(result.gpu, result.versions, result.suite, result.kernel_sha)

    def _draw_progress(self, hold) -> None:
        runs = pd.DataFrame([{"x": r["tool_index"], "geomean": r["geomean_vs_original"] if r["geomean_vs_original"]
                              is not None else float("nan"), "all_correct": r["all_correct"],
                              "best": r["best"] if r["best"] is not None else float("nan")} for r in self.model.runs],
                            columns=["x", "geomean", "all_correct", "best"])
        marks = pd.DataFrame(self.model.marks, columns=["x", "trigger", "label"])
        result = self.model.last_result
        footer = self._footer(result) if result is not None else "no harness run yet"
        fig = plots.campaign_progress(runs, marks, footer=footer,
                                      title="Best geomean so far, questions marked by trigger")
        png = plots.to_png(fig)
        self._hold_image(hold, self.view.progress, self.view.figures_note)
        hold(self.view.progress_axes)
        self.view.progress_axes.value = (f'<div class="wb-alt">Progress plot axes: '
                                         f'{render.esc(plots.tick_summary(fig.axes[0]))}</div>')
        show_image(self.view.progress, png, self.view.figures_note)

    @staticmethod
    def _hold_image(hold, image, placeholder=None) -> None:
        hold(image)
        if placeholder is not None:
            hold(placeholder.layout)

    def _draw_best(self, hold) -> None:
        result, frame = self.model.best_result, self.model.best_frame
        if result is None or frame is None or not len(frame):
            return
        footer = self._footer(result)
        sha = result.kernel_sha[:12]
        anchors = plots.to_png(plots.scenario_tflops(frame, footer=footer, candidate_label=f"best candidate {sha}",
                                                     title=f"TFLOP/s per scenario: best candidate {sha} against "
                                                           "the anchors"))
        ceiling = plots.to_png(plots.ceiling_fraction(frame, footer=footer, ceiling_tflops=self.ceiling_tflops,
                                                      title="Best candidate, % of the measured ceiling"))
        self._hold_image(hold, self.view.anchors, self.view.anchors_note)
        self._hold_image(hold, self.view.ceiling)
        show_image(self.view.anchors, anchors, self.view.anchors_note)
        show_image(self.view.ceiling, ceiling)
