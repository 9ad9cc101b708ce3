"""The campaign service behind `workbench mcp` and `workbench check --campaign`: it asks exactly the questions the
built-in loop asks (one policy, `Policy.question_at_boundary`), reads claims from the agent's arguments, takes a
person's questions from the inbox file, and a call cut short leaves no row behind."""
from __future__ import annotations

import pytest

from workbench.agent.backends.fake import FakeBackend, call, say
from workbench.agent.campaign_service import CampaignError, CampaignService
from workbench.agent.loop import Campaign
from workbench.campaign.config import CampaignConfig
from workbench.campaign.events import EventLog, InterventionFired
from workbench.evaluators.standin_timings import SequenceEvaluator
from workbench.questions.inbox import post_question, read_inbox
from workbench.questions.policy import Policy, PolicyConfig
from workbench.traces.writer import TraceWriter, read_table

KERNEL = "// test kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
SPEEDUPS = [1.0, 1.0, 1.0, 2.0, 2.1, 2.1, 2.1, 2.1, 3.0]    # stall, a 2x jump, a claim, a flag, stall, stop
FLAGS = {5: ["below_memory_floor:1"]}
STOP = "all_correct and geomean_vs_original >= 2.5"
NOTES = {4: "The kernel is now optimal; I am done."}


def config(tmp_path, cid, mode="bank", stop=STOP):
    return CampaignConfig(suite="smoke", mode=mode, root=str(tmp_path), campaign_id=cid, stop_expr=stop,
                          policy=PolicyConfig(stall_runs=2, stall_calls=100))


def service(tmp_path, cid="ext", mode="bank", speedups=SPEEDUPS, flags=FLAGS, stop=STOP):
    return CampaignService.create(config(tmp_path, cid, mode, stop), evaluator=SequenceEvaluator(speedups, flags),
                                  kernel_text=KERNEL)


@pytest.fixture
def boundary_calls(monkeypatch):
    """Every call of the one turn-boundary decision, with who made it."""
    calls = []
    original = Policy.question_at_boundary

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        calls.append((self, out))
        return out
    monkeypatch.setattr(Policy, "question_at_boundary", spy)
    return calls


def test_the_built_in_loop_and_an_external_campaign_ask_the_same_questions(tmp_path, boundary_calls):
    # the built-in loop: one run_harness per turn; the 5th turn's text claims the kernel is finished
    script = [[say(NOTES.get(i, "")), call("run_harness")] if i in NOTES else [call("run_harness")]
              for i in range(len(SPEEDUPS))]
    loop = Campaign.create(config(tmp_path, "loop"), FakeBackend(script), evaluator=SequenceEvaluator(SPEEDUPS, FLAGS),
                           kernel_text=KERNEL)
    log = EventLog()
    loop.subscribe(log)
    assert loop.run().reason == "stop_condition_met"
    asked_by_loop = [(e.turn, e.trigger, e.source, e.question_id) for e in log.of(InterventionFired)]

    # the same harness results, reached by an outside agent's check_kernel calls with the same text as notes
    ext = service(tmp_path)
    with ext.session("test"):
        replies = [ext.check(notes=NOTES.get(i, "")) for i in range(len(SPEEDUPS))]
    asked_by_service = [(r.turn, r.trigger, r.source, r.question_id) for r in
                        read_table(ext.ws.traces_dir, "interventions").sort_values("turn").itertuples()]

    assert [t for _, t, _, _ in asked_by_loop] == ["stall", "suspicious", "claim", "suspicious", "stall"]
    assert asked_by_service == asked_by_loop
    assert replies[-1].stop_met and "MET: the campaign is done" in replies[-1].text
    deciders = {id(policy) for policy, _ in boundary_calls}
    assert deciders == {id(loop.policy), id(ext.policy)}           # both went through the one decision
    assert len(boundary_calls) == 2 * len(SPEEDUPS)


def test_a_claim_argument_is_questioned_unless_the_stop_condition_holds(tmp_path):
    ext = service(tmp_path, speedups=[1.0, 3.0], flags={})
    with ext.session("test"):
        doubted = ext.check(claim="register pressure caps it here")
        done = ext.check(claim="finished")
    assert doubted.inquiry.trigger == "claim" and "register pressure" in doubted.inquiry.reason
    assert "=== QUESTION (claim; from the question bank" in doubted.text
    assert done.stop_met and done.inquiry is None and "=== QUESTION" not in done.text


def test_a_person_s_questions_come_from_the_inbox_file_in_order(tmp_path):
    ext = service(tmp_path, mode="human", speedups=[1.0], flags={})
    post_question(ext.ws.root, "Is the L2 flushed between timed launches?")
    post_question(ext.ws.root, "What does ncu say about bank conflicts?", question_id="q020")
    with open(ext.ws.root / "inbox.jsonl", "a") as inbox:
        inbox.write('{"text": "a line still being writ')       # no newline yet: not read
    with ext.session("test"):
        first, second, third = ext.check(), ext.check(), ext.check()
    assert (first.inquiry.source, first.inquiry.text) == ("human", "Is the L2 flushed between timed launches?")
    assert second.inquiry.question_id == "q020" and third.inquiry is None
    assert len(read_inbox(ext.ws.root)) == 2
    messages = read_table(ext.ws.traces_dir, "messages")
    assert list(messages[messages["is_human"]].sort_values("turn")["text"]) == [
        "Is the L2 flushed between timed launches?", "What does ncu say about bank conflicts?"]


def test_ask_question_follows_the_mode(tmp_path):
    bank = service(tmp_path, cid="b", mode="bank", speedups=[1.0], flags={})
    with bank.session("test"):
        reply = bank.ask("stall")
    assert reply.inquiry.source == "bank" and reply.inquiry.trigger == "stall" and "=== QUESTION (stall" in reply.text
    assert list(read_table(bank.ws.traces_dir, "interventions")["source"]) == ["bank"]
    human = service(tmp_path, cid="h", mode="human", speedups=[1.0], flags={})
    with human.session("test"):
        assert human.ask().inquiry is None and "no person's question is waiting" in human.ask().text
    baseline = service(tmp_path, cid="t", mode="tools_only", speedups=[1.0], flags={})
    with baseline.session("test"), pytest.raises(CampaignError, match="tools_only"):
        baseline.ask("stall")
    with pytest.raises(CampaignError, match="trigger 'bored'"):
        bank.ask("bored")


def test_a_call_cut_short_leaves_no_row_behind(tmp_path, monkeypatch):
    ext = service(tmp_path, speedups=[1.0, 1.0, 1.0, 1.0], flags={})
    append = TraceWriter.append

    def die_before_messages(self, table, rows):     # killed after the call's tool_calls and evaluations landed
        rows = list(rows)
        if table == "messages" and rows and rows[0]["turn"] == 3:
            raise KeyboardInterrupt("killed")
        return append(self, table, rows)
    monkeypatch.setattr(TraceWriter, "append", die_before_messages)
    with pytest.raises(KeyboardInterrupt), ext.session("test"):
        ext.check(), ext.check(), ext.check()
    assert 3 in set(read_table(ext.ws.traces_dir, "evaluations")["turn"])      # the torn call's rows are on disk
    monkeypatch.setattr(TraceWriter, "append", append)
    again = CampaignService.open(tmp_path, "ext", evaluator=SequenceEvaluator([1.0]))
    with again.session("test"):
        assert again.turn == 2 and again.runs == 2
        reply = again.check()
    assert "3 harness run(s)" in reply.text and reply.inquiry.trigger == "stall"   # the policy state of call 2
    root = again.ws.traces_dir
    evaluations = read_table(root, "evaluations")
    assert sorted(evaluations["turn"].unique()) == [1, 2, 3] and evaluations["eval_id"].nunique() == 3
    assert list(read_table(root, "tool_calls").sort_values("turn")["turn"]) == [1, 2, 3]
    assert not read_table(root, "messages").duplicated(["message_id", "block_index"]).any()


def test_calls_outside_a_session_and_bad_paths_are_refused(tmp_path):
    ext = service(tmp_path, speedups=[1.0], flags={})
    with pytest.raises(RuntimeError, match="inside `with service.session"):
        ext.check()
    outside = tmp_path / "outside.cu"
    outside.write_text(KERNEL)
    (ext.ws.root / "link.cu").symlink_to(outside)
    with ext.session("test"):
        for path, why in ((str(outside), "outside the campaign workspace"), ("link.cu", "symlink"),
                          ("../outside.cu", "outside the campaign workspace"), ("gone.cu", "no such kernel file")):
            with pytest.raises(CampaignError if why == "no such kernel file" else Exception, match=why):
                ext.check(path)
        with pytest.raises(CampaignError, match="no suite"):
            ext.check(suite="no_such_suite")
    assert read_table(ext.ws.traces_dir, "tool_calls").empty        # refused before any work: nothing recorded
    with pytest.raises(CampaignError, match="no campaign 'nope'"):
        CampaignService.open(tmp_path, "nope")


def test_the_built_in_loop_does_not_resume_an_outside_agent_s_campaign(tmp_path):
    ext = service(tmp_path, speedups=[1.0], flags={})
    with pytest.raises(Exception, match="run by an agent of your own; continue it with `workbench mcp --campaign ext`"):
        Campaign.resume("ext", FakeBackend([]), root=str(tmp_path))
    assert ext.ws.load_snapshot(0)["kind"] == "external"          # untouched
