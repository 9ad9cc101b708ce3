"""The notebook follows a campaign an outside agent runs: the watcher turns the campaign's committed calls into the
loop's events, the widgets show them as they land, and the chat box reaches the agent through the inbox file."""
from __future__ import annotations

import faulthandler
import time

import pytest

pytest.importorskip("ipywidgets", reason="the notebook extra is not installed: pip install -e '.[notebook]'")

from workbench.agent.campaign_service import CampaignService  # noqa: E402
from workbench.campaign.config import CampaignConfig  # noqa: E402
from workbench.campaign.events import CampaignStopped, EvaluationDone, EventLog, InterventionFired  # noqa: E402
from workbench.evaluators.standin_timings import KnobEvaluator  # noqa: E402
from workbench.questions.inbox import read_inbox  # noqa: E402
from workbench.questions.policy import PolicyConfig  # noqa: E402
from workbench.ui.watch import CampaignWatcher, watch, watch_demo  # noqa: E402

KERNEL_A = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
KERNEL_B = KERNEL_A.replace("KEY_TILE 8 ", "KEY_TILE 16 ")        # x1.42 on the stand-in landscape (A: x1.06)


def make(tmp_path, cid="c-watch"):
    config = CampaignConfig(suite="smoke", mode="hybrid", stop_expr="all_correct and geomean_vs_original >= 1.3",
                            root=str(tmp_path), campaign_id=cid, policy=PolicyConfig(stall_runs=2))
    return CampaignService.create(config, evaluator=KnobEvaluator(), kernel_text=KERNEL_A)


def wait_until(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_watcher_replays_committed_calls_as_the_loop_s_events(tmp_path):
    service = make(tmp_path)
    with service.session("test"):
        replies = [service.check() for _ in range(3)]
        service.ws.kernel_path.write_text(KERNEL_B)
        replies.append(service.check())
    watcher = CampaignWatcher(service.ws.root, poll_s=0.01)
    log = EventLog()
    watcher.subscribe(log)
    stopped = watcher.run()                      # caught up, and the last run meets the stop condition: it ends

    assert stopped.reason == "stop_condition_met" and stopped.turn == 4
    runs = log.of(EvaluationDone)
    assert [e.is_new_best for e in runs] == [True, False, False, True]       # the campaign's own policy decides
    assert [e.geomean_vs_original for e in runs] == pytest.approx([1.0570588, 1.0570588, 1.0570588, 1.4217647])
    assert runs[-1].result.stop_met and len(runs[-1].result.rows) == 8
    fired = log.of(InterventionFired)
    assert [(e.turn, e.trigger, e.source) for e in fired] == [(3, "stall", "bank")]
    assert fired[0].text in replies[2].text
    assert stopped.best_vs_original == pytest.approx(1.4217647) and stopped.best_sha == replies[-1].kernel_sha


def test_the_widgets_follow_a_live_campaign_and_the_chat_box_reaches_its_agent(tmp_path):
    service = make(tmp_path)
    app, note = watch(service.ws.root, poll_s=0.05)
    assert "watching campaign c-watch" in note
    app.start()
    with service.session("test"):
        service.check()
        wait_until(lambda: len(app.runs) == 1, what="the first run in the widgets")
        app.view.input.value = "Is the key tile the limit?"
        app.view.send.click()                                   # the chat box: into the campaign's inbox file
        assert [item["text"] for item in read_inbox(service.ws.root)] == ["Is the key tile the limit?"]
        reply = service.check()                                 # the agent's next call carries it
        assert reply.inquiry.source == "human" and reply.inquiry.text == "Is the key tile the limit?"
        wait_until(lambda: app.status["questions"] == 1, what="the question in the widgets")
    html = "".join(item["html"] for item in app.items.values())
    assert "Is the key tile the limit?" in html and "wb-human" in html
    assert app.status["runs"] == 2
    app.stop()                                                  # stops watching; the campaign is untouched
    stopped = app.wait(timeout=30)
    assert stopped is not None and stopped.reason == "stopped_watching"
    assert service.ws.config_path.exists()


def test_the_demo_plays_an_agent_into_a_watched_campaign(tmp_path):
    app, note = watch_demo(tmp_path, pace_s=0.05, poll_s=0.05)
    assert "demo campaign" in note and app.demo_label
    app.start()
    try:
        stopped = app.wait(timeout=60)           # ~2 s alone; CI's one miss (2026-12-07) hung in a parquet read
        if stopped is None:
            faulthandler.dump_traceback(all_threads=True)   # where each thread waits, for the next such failure
    finally:
        app.stop()                               # no watcher thread left running into the interpreter's exit
    assert isinstance(stopped, CampaignStopped) and stopped.reason == "stop_condition_met", app.status
    frame = app.runs_frame()
    assert len(frame) == 4 and bool(frame["new_best"].iloc[-1])
    assert frame["question"].str.len().gt(0).sum() >= 1         # the stall or the claim was questioned


def test_a_watched_gemm_campaign_speaks_cublas_with_its_figures(tmp_path):
    """The watcher takes the main anchor and its figures from the trace rows; the model and the widgets' HTML
    (chips, status line, per-scenario and runs tables, the stop line) say cuBLAS, never FA3."""
    from pathlib import Path

    from workbench.ui import render
    from workbench.ui.model import CampaignModel

    gemm = Path(__file__).resolve().parents[1] / "kernels" / "gemm_bf16" / "original.cu"
    config = CampaignConfig(suite="smoke", mode="hybrid", stop_expr="", root=str(tmp_path), campaign_id="c-gemm",
                            problem="gemm_bf16", anchors=["cublas"])
    service = CampaignService.create(config, evaluator=KnobEvaluator(), kernel_text=gemm.read_text())
    with service.session("test"):
        service.check()
        service.check()
    watcher = CampaignWatcher(service.ws.root, poll_s=0.01)
    log, model = EventLog(), CampaignModel()
    watcher.subscribe(log)
    watcher.subscribe(model.apply)
    watcher.catch_up()
    watcher.stop()
    stopped = watcher.run()
    runs = log.of(EvaluationDone)
    assert len(runs) == 2 and all(e.main_anchor == "cublas" and 0 < e.geomean_vs_main < 10 for e in runs)
    assert stopped.main_anchor == "cublas" and stopped.best_vs_main == pytest.approx(runs[0].geomean_vs_main)
    html = (render.status_html(model.status) + render.run_head(model.runs[-1])
            + render.table_html(model.frame, "", model.runs[-1]["main_anchor"])
            + render.runs_table_html(model.runs_frame()) + "".join(item["html"] for item in model.items.values()))
    assert html.count("cuBLAS") >= 6 and "FA3" not in html
    assert render.fmt_x(runs[0].geomean_vs_main) in render.status_html(model.status)
