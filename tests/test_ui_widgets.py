"""The notebook widgets, headless (no browser, no kernel: the comm package's default comm is a no-op).

A fake backend drives a real Campaign on its worker thread; the test types into the widgets and clicks their
buttons exactly as a person would, then reads what the widgets show.
"""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("ipywidgets", reason="the notebook extra is not installed: pip install -e '.[notebook]'")

from workbench.agent.backends.fake import FakeBackend, call, say  # noqa: E402
from workbench.agent.backends.turns import AssistantTurn, BackendExhausted  # noqa: E402
from workbench.agent.loop import Campaign  # noqa: E402
from workbench.campaign.config import Budget, CampaignConfig  # noqa: E402
from workbench.evaluators.standin_timings import SequenceEvaluator  # noqa: E402
from workbench.questions.policy import PolicyConfig  # noqa: E402
from workbench.traces.writer import read_table  # noqa: E402
from workbench.ui import DEMO_LABEL, DEMO_RECORDING, CampaignController, Settings, launch  # noqa: E402
from workbench.ui.render import footer_text  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
KERNEL = "// toy kernel\nint x;\n"


def wait_until(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def make_app(tmp_path, script, speedups=(1.0,), mode="hybrid", turns=10, cid="ui", **kw):
    config = CampaignConfig(suite="smoke", mode=mode, root=str(tmp_path), campaign_id=cid, agent="fake",
                            stop_expr="all_correct and geomean_vs_original >= 100", budget=Budget(turns=turns),
                            policy=PolicyConfig(stall_runs=2))
    campaign = Campaign.create(config, FakeBackend(script), evaluator=SequenceEvaluator(list(speedups)),
                               kernel_text=KERNEL)
    return CampaignController(campaign, **kw)


def is_png(value) -> bool:
    return bytes(value[:8]) == PNG


def transcript_html(app) -> str:
    return "\n".join(child.value for child in app.view.transcript.children)


def gate():
    """A turn that waits until the test lets it go; `reached` says the campaign is inside it."""
    reached, release = threading.Event(), threading.Event()

    def turn(request):
        reached.set()
        assert release.wait(30), "the test never released the turn"
        return [say("Measuring again."), call("run_harness")]
    return turn, reached, release


def test_typed_question_goes_to_the_inbox_and_becomes_an_intervention(tmp_path):
    turn2, reached, release = gate()
    app = make_app(tmp_path, [[say("Let me measure."), call("run_harness")], turn2, [say("Thinking.")]])
    app.start()
    assert reached.wait(20)
    app.view.input.value = "Are you winning on cycles or on wall time?"
    app.view.send.click()
    assert len(app.campaign.inbox) == 1                     # the click only enqueued
    wait_until(lambda: "You asked" in transcript_html(app) and app.view.input.value == "",
               what="the pending question shown and the input box cleared (by the UI thread)")
    release.set()
    stopped = app.wait(30)
    assert stopped is not None
    html = transcript_html(app)
    assert 'data-source="human"' in html and "Are you winning on cycles or on wall time?" in html
    assert "You asked" not in html                          # delivered: the pending note became a banner
    rows = read_table(app.campaign.ws.traces_dir, "interventions")
    human = rows[rows["source"] == "human"]
    assert len(human) == 1 and human["question_text"].iloc[0].startswith("Are you winning")
    assert int(human["turn"].iloc[0]) == 2                  # injected at the boundary after the turn it was typed in
    assert app.status["questions"] == len(rows) and app.errors == []


def test_ask_from_bank_follows_the_latest_trigger(tmp_path):
    turn4, reached, release = gate()
    script = [[say("Measure."), call("run_harness")], [call("run_harness")], [call("run_harness")], turn4,
              [say("ok")]]
    app = make_app(tmp_path, script, speedups=[1.0, 1.0, 1.0, 1.0], mode="human")    # runs 2, 3: a stall
    app.start()
    assert reached.wait(20)
    wait_until(lambda: app.trigger == "stall" and "stall" in app.view.trigger.value, what="the stall trigger")
    triggers = {q.id: q.trigger for q in app.bank}
    options = [qid for _, qid in app.view.bank_pick.options]
    assert options and {triggers[q] for q in options} <= {"stall", "any"}
    assert triggers[options[0]] == "stall"                  # questions written for the trigger come first
    app.view.bank_pick.value = options[1]
    app.view.ask_bank.click()
    assert len(app.campaign.inbox) == 1
    release.set()
    app.wait(30)
    fired = read_table(app.campaign.ws.traces_dir, "interventions")
    assert list(fired["question_id"]) == [options[1]] and list(fired["source"]) == ["human"]


def test_tool_blocks_and_bank_banners_render(tmp_path):
    script = [[say("Reading a file that is not there, then measuring `kernel.cu`."),
               call("read_file", path="missing.cu"), call("run_harness")],
              [call("run_harness")], [call("run_harness")], [say("Still thinking.")]]
    app = make_app(tmp_path, script, speedups=[1.0, 1.0, 1.0], mode="bank")
    app.start()
    app.wait(30)
    html = transcript_html(app)
    assert html.count('<details class="wb-tool') == 4
    assert '<details class="wb-tool wb-error">' in html and "missing.cu: no such file" in html
    assert '<span class="wb-name">run_harness</span>' in html and " s</span>" in html     # name and duration
    assert "<code>kernel.cu</code>" in html
    assert "new best" in html                               # the first run's chip
    assert 'class="wb-banner wb-stall"' in html and 'data-source="bank"' in html
    assert "from the question bank" in html
    assert "Stopped: the agent has no more turns" in html


def test_stop_button_stops_the_campaign(tmp_path):
    turn3, reached, release = gate()
    script = [[say("Measure."), call("run_harness")], [call("run_harness")], turn3] + [[call("run_harness")]] * 50
    app = make_app(tmp_path, script, speedups=[1.0, 1.1, 1.2, 1.3], turns=60)
    app.start()
    assert reached.wait(20)
    app.view.stop.click()
    wait_until(lambda: app.view.stop.disabled and "stopping" in app.view.status.value, what="stopping state")
    release.set()
    stopped = app.wait(30)
    assert stopped.reason == "stopped_by_user" and stopped.turn == 3
    assert all(c.disabled for c in app.view.controls)
    assert "Stopped: stopped by you" in transcript_html(app)


def test_table_and_figures_update_after_each_evaluation(tmp_path):
    turn2, reached, release = gate()
    app = make_app(tmp_path, [[say("Measure."), call("run_harness")], turn2, [say("done?")]], speedups=[1.25, None])
    app.start()
    assert reached.wait(20)
    wait_until(lambda: "Harness run #1" in app.view.table.value and is_png(app.view.progress.value)
               and is_png(app.view.anchors.value), what="table and figures after run 1")
    assert "wb-failed" not in app.view.table.value and "smoke_basic" in app.view.table.value
    assert is_png(app.view.ceiling.value)
    first_progress = bytes(app.view.progress.value)
    release.set()
    app.wait(30)
    table = app.view.table.value                            # run 2 failed everywhere: red rows, reasons shown
    assert "Harness run #2" in table and table.count('class="wb-failed"') == 8 and "wrong_output" in table
    assert bytes(app.view.progress.value) != first_progress
    assert app.frame is not None and set(app.frame["status"]) == {"failed"}
    assert app.best_frame is not None and set(app.best_frame["status"]) == {"passed"}


def test_only_the_ui_thread_changes_widget_values(tmp_path):
    turn2, reached, release = gate()
    app = make_app(tmp_path, [[say("Measure."), call("run_harness")], turn2, [say("ok")]])
    writers = set()
    for widget in [app.view.status, app.view.table, app.view.progress, app.view.input, app.view.transcript,
                   app.view.bank_pick, app.view.stop]:
        widget.observe(lambda change: writers.add(threading.current_thread().name), names=None)
    before = set(writers)                                   # construction (main thread) is not counted
    writers.clear()
    app.start()
    assert reached.wait(20)
    app.view.input.value = "why?"                           # the person typing: a front-end change
    writers.discard(threading.current_thread().name)
    app.view.send.click()
    app.view.stop.click()
    release.set()
    app.wait(30)
    assert writers == {"campaign-ui"}, (before, writers)


class SlowTalker:
    """A backend that streams one long message in many small pieces, then has nothing more to say."""
    name, model = "slow", "slow-model"

    def __init__(self, pieces=150, pause_s=0.006):
        self.pieces, self.pause_s, self.calls = pieces, pause_s, 0

    def next_turn(self, request, on_text):
        self.calls += 1
        if self.calls > 1:
            raise BackendExhausted("said everything")
        for _ in range(self.pieces):
            on_text(0, "word ")
            time.sleep(self.pause_s)
        return AssistantTurn([say(("word " * self.pieces).strip())], "end_turn", model=self.model)


def test_streamed_text_is_throttled_and_complete(tmp_path):
    config = CampaignConfig(suite="smoke", mode="bank", root=str(tmp_path), campaign_id="slow", agent="slow")
    app = CampaignController(Campaign.create(config, SlowTalker(), evaluator=SequenceEvaluator([1.0]),
                                             kernel_text=KERNEL), hz=10.0)
    flushes = []
    original = app._flush
    app._flush = lambda: (flushes.append(time.monotonic()), original())[1]
    app.start()
    app.wait(30)
    span = flushes[-1] - flushes[0]
    assert span > 0.5 and len(flushes) <= span * 10 + 4, (len(flushes), span)    # ~10 updates a second at most
    assert ("word " * 150).strip() in transcript_html(app)


def test_demo_replay_through_the_widgets(tmp_path):
    app, note = launch(Settings(agent=None, root=str(tmp_path), pace_s=0.0))
    assert "replaying" in note and DEMO_LABEL in note
    app.start()
    stopped = app.wait(120)
    assert stopped.reason == "budget_turns" and app.errors == []
    html = transcript_html(app)
    assert html.count('class="wb-banner') == 7 and 'data-source="human"' in html
    for trigger in ("stall", "claim", "suspicious"):
        assert f'data-trigger="{trigger}"' in html
    assert DEMO_LABEL in app.view.demo.value and app.view.demo.layout.display != "none"
    assert "wb-failed" in app.view.table.value or "wb-unsupported" in app.view.table.value
    replayed = read_table(app.campaign.ws.traces_dir, "interventions")      # the same questions, same places
    recorded = read_table(DEMO_RECORDING / "traces", "interventions")
    cols = ["turn", "trigger", "source", "question_id"]
    assert replayed[cols].reset_index(drop=True).equals(recorded[cols].reset_index(drop=True))


def test_footers_say_gpu_dtype_versions_timing_and_demo():
    demo = footer_text("CPU stand-in (demo recording, not GPU measurements)", {"evaluator": "stand-in"}, "dev26",
                       "ab" * 8)
    assert demo.startswith(DEMO_LABEL) and "dtype bf16" in demo and "versions: evaluator stand-in" in demo
    assert "timing: invented" in demo
    real = footer_text("NVIDIA H200", {"torch": "2.11.0+cu130", "anchor_fa3": "0.0.3", "sms": 132}, "dev26")
    assert DEMO_LABEL not in real and "GPU: NVIDIA H200" in real and "CUDA events" in real and "sms" not in real


def test_a_turn_the_agent_never_answered_is_not_left_in_the_transcript(tmp_path):
    # the script ends after two turns: turn 3 starts, the backend has nothing more, the campaign stops
    app = make_app(tmp_path, [[say("Measuring."), call("run_harness")], [say("Done here.")]])
    app.start()
    stopped = app.wait(30)
    assert stopped.reason == "agent_finished" and app.errors == []
    html = transcript_html(app)
    assert "turn 2</div>" in html and "turn 3</div>" not in html and "…</div>" not in html
