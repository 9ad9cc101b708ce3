"""A whole campaign with the fake backend and a CPU stand-in evaluator: every trigger fires at the right
turn, the question lands after the tool results of that turn, and the modes, inbox, stop() and budgets work."""
import threading

import pytest

from workbench.agent.backends.fake import FakeBackend, call, say
from workbench.agent.loop import Campaign
from workbench.campaign.config import Budget, CampaignConfig
from workbench.campaign.events import (CampaignStopped, EvaluationDone, EventLog, InterventionFired, MessageDone,
                                       ToolCallFinished, TriggerDetected, TurnCommitted, Usage)
from workbench.evaluators.standin_timings import SequenceEvaluator
from workbench.questions.bank import load_bank
from workbench.questions.policy import PolicyConfig
from workbench.traces.writer import read_table

KERNEL = "// test kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"


def script():
    """Seven turns: stall at 3, a 2x jump at 4, a claim at 5, a harness flag at 6, the stop condition at 7."""
    return [
        [say("Measuring the starting point."), call("run_harness")],          # run 0: x1.0 (first best)
        [call("run_harness")],                                                 # run 1: x1.0
        [say("Trying again."), call("run_harness")],                           # run 2: x1.0 -> stall (2 runs)
        [call("run_harness")],                                                 # run 3: x2.0 -> jump > 1.5x
        [say("The kernel is now optimal; I am done.")],                        # claim, no tools
        [say("Looking closer."), call("read_file", path="kernel.cu"), call("run_harness")],  # run 4: flag
        [call("run_harness")],                                                 # run 5: x3 -> stop holds
        [say("never reached")],
    ]


SPEEDUPS = [1.0, 1.0, 1.0, 2.0, 2.1, 3.0]     # the last is < 1.5x over 2.1: not a jump
STOP = "all_correct and geomean_vs_original >= 2.5"
FLAGS = {4: ["below_memory_floor:1"]}


def make(tmp_path, mode="bank", budget=None, backend=None, evaluator=None):
    config = CampaignConfig(suite="smoke", mode=mode, root=str(tmp_path), campaign_id=f"c-{mode}",
                            stop_expr=STOP, agent="fake",
                            policy=PolicyConfig(stall_runs=2, stall_calls=100), budget=budget or Budget())
    backend = backend or FakeBackend(script())
    evaluator = evaluator or SequenceEvaluator(SPEEDUPS, FLAGS)
    campaign = Campaign.create(config, backend, evaluator=evaluator, kernel_text=KERNEL)
    log = EventLog()
    campaign.subscribe(log)
    return campaign, backend, log


def user_message_of(backend, turn):
    """The user message that closed `turn`, as the backend saw it at the start of the next turn."""
    return backend.requests[turn].messages[-1]


def test_each_trigger_fires_at_its_turn_and_the_question_follows_the_tool_results(tmp_path):
    campaign, backend, log = make(tmp_path)
    stopped = campaign.run()

    assert stopped.reason == "stop_condition_met"
    assert stopped.turn == 7 and stopped.tool_calls == 7
    assert {e.turn: e.trigger for e in log.of(TriggerDetected)} == {3: "stall", 4: "suspicious", 5: "claim",
                                                                   6: "suspicious"}
    fired = log.of(InterventionFired)
    assert [(e.turn, e.trigger, e.source) for e in fired] == [(3, "stall", "bank"), (4, "suspicious", "bank"),
                                                              (5, "claim", "bank"), (6, "suspicious", "bank")]
    assert "jumps 2.00x" in fired[1].reason and "below_memory_floor" in fired[3].reason
    bank = {q.id: q for q in load_bank()}
    for e in fired:
        assert bank[e.question_id].trigger in (e.trigger, "any") and bank[e.question_id].text == e.text
    ids = [e.question_id for e in fired]
    assert all(a != b for a, b in zip(ids, ids[1:]))
    assert fired[0].best_before == pytest.approx(1.0) and fired[2].best_before == pytest.approx(2.0)

    # turn 3: [tool_result of turn 3's call, question]; turn 5 (no tools): [question]; turn 6: two results, question
    msg3 = user_message_of(backend, 3)
    assert msg3["role"] == "user"
    assert [b["type"] for b in msg3["content"]] == ["tool_result", "text"]
    assert msg3["content"][0]["tool_use_id"] == backend.requests[3].messages[-2]["content"][1]["id"]
    assert msg3["content"][1]["text"] == fired[0].text
    assert [b["type"] for b in user_message_of(backend, 5)["content"]] == ["text"]
    assert user_message_of(backend, 5)["content"][0]["text"] == fired[2].text
    msg6 = user_message_of(backend, 6)
    assert [b["type"] for b in msg6["content"]] == ["tool_result", "tool_result", "text"]
    assert msg6["content"][2]["text"] == fired[3].text
    # the tool_result ids answer the tool_use ids of the same turn, in order
    uses = [b["id"] for b in backend.requests[6].messages[-2]["content"] if b["type"] == "tool_use"]
    assert [b["tool_use_id"] for b in msg6["content"][:2]] == uses
    # no question on turns without a trigger
    assert [b["type"] for b in user_message_of(backend, 1)["content"]] == ["tool_result"]
    # the questions the backend was told about (the scripted agent reads their layers)
    assert [q["question_id"] for q in backend.requests[6].questions] == ids


def test_trace_tables_record_the_campaign(tmp_path):
    campaign, backend, log = make(tmp_path)
    campaign.run()
    root = campaign.ws.traces_dir
    interventions = read_table(root, "interventions")
    assert list(interventions["trigger"]) == ["stall", "suspicious", "claim", "suspicious"]
    assert set(interventions["source"]) == {"bank"}
    messages = read_table(root, "messages")
    user_text = messages[(messages.role == "user") & (messages.block_type == "text")]
    opening, questions = (user_text[user_text.message_id.str.endswith("_00000")],
                          user_text[~user_text.message_id.str.endswith("_00000")])
    assert list(opening["turn"]) == [1] and "Make kernel.cu faster" in opening["text"].iloc[0]   # the task, once
    assert list(questions["turn"]) == [3, 4, 5, 6] and not questions["is_human"].any()
    assert not messages.duplicated(["message_id", "block_index"]).any()
    tool_uses = messages[messages.block_type == "tool_use"]
    assert set(tool_uses["tool_name"]) == {"run_harness", "read_file"} and tool_uses["tool_use_id"].notna().all()
    calls = read_table(root, "tool_calls")
    assert list(calls["tool_index"]) == list(range(1, 8))
    evaluations = read_table(root, "evaluations")
    assert evaluations["eval_id"].nunique() == 6 and len(evaluations) == 6 * 8     # 8 smoke scenarios
    assert evaluations.groupby("eval_id")["turn"].nunique().max() == 1
    sessions = read_table(root, "sessions")
    assert len(sessions) == 1
    row = sessions.iloc[0]
    assert row.stop_reason.startswith("stop_condition_met") and row.turns == 7 and row.tool_calls == 7
    assert row.arm == "bank" and row.best_vs_original == pytest.approx(3.0)
    # token usage recorded once per assistant message
    assistant_first = messages[(messages.role == "assistant") & (messages.block_index == 0)]
    assert (assistant_first["input_tokens"] == 100).all() and assistant_first["output_tokens"].sum() == 7 * 20
    assert len(log.of(TurnCommitted)) == 7


def test_saying_done_never_ends_a_campaign(tmp_path):
    backend = FakeBackend([[say("I am done. This is optimal.")]] * 4)
    campaign, _, log = make(tmp_path, backend=backend, budget=Budget(turns=4))
    stopped = campaign.run()
    assert stopped.reason == "budget_turns" and stopped.turn == 4
    assert [e.trigger for e in log.of(InterventionFired)] == ["claim"] * 4


def test_an_agent_that_only_talks_is_stopped_after_the_idle_turn_budget(tmp_path):
    # one tool call resets the count; then every question goes unanswered by any action
    backend = FakeBackend([[say("looking"), call("list_files")]] + [[say("I am done. This is optimal.")]] * 20)
    campaign, _, log = make(tmp_path, backend=backend, budget=Budget(idle_turns=3))
    stopped = campaign.run()
    assert stopped.reason == "budget_idle_turns" and stopped.turn == 4
    assert [e.trigger for e in log.of(InterventionFired)] == ["claim"] * 3
    assert Budget.parse("idle=5").idle_turns == 5


def test_tools_only_never_intervenes_but_says_the_stop_condition_does_not_hold(tmp_path):
    campaign, backend, log = make(tmp_path, mode="tools_only")
    stopped = campaign.run()
    assert stopped.reason == "stop_condition_met"
    assert log.of(InterventionFired) == []
    assert [e.trigger for e in log.of(TriggerDetected)] == ["stall", "suspicious", "claim", "suspicious"]
    after_claim = user_message_of(backend, 5)["content"]
    assert len(after_claim) == 1 and "does not hold yet" in after_claim[0]["text"]
    assert [b["type"] for b in user_message_of(backend, 3)["content"]] == ["tool_result"]
    assert len(read_table(campaign.ws.traces_dir, "interventions")) == 0
    assert campaign.ask("why?") is False


def test_human_question_from_another_thread_lands_at_the_next_turn_boundary(tmp_path):
    go_on = threading.Event()

    def turn_two(request):
        go_on.wait(5)          # the person types while turn 2 is being generated
        return [call("run_harness")]

    backend = FakeBackend([[call("run_harness")], turn_two, [say("ok")], [call("run_harness")]])
    campaign, _, log = make(tmp_path, mode="human", backend=backend, budget=Budget(turns=4))
    worker = threading.Thread(target=campaign.run)
    worker.start()
    while not backend.requests or len(backend.requests) < 2:
        threading.Event().wait(0.01)
    assert campaign.ask("Are you winning on kernel cycles or only on wall time?", question_id="") is True
    go_on.set()
    worker.join(10)
    assert not worker.is_alive()

    fired = log.of(InterventionFired)
    assert [(e.turn, e.source, e.trigger) for e in fired] == [(2, "human", "human")]
    msg2 = user_message_of(backend, 2)
    assert [b["type"] for b in msg2["content"]] == ["tool_result", "text"]
    assert msg2["content"][1]["text"].startswith("Are you winning")
    # human mode asks nothing from the bank: the stall at turn 3 is only detected
    assert any(e.trigger == "claim" for e in log.of(TriggerDetected))
    done = [e for e in log.of(MessageDone) if e.role == "user" and e.turn == 2][0]
    assert done.human_block == 1
    messages = read_table(campaign.ws.traces_dir, "messages")
    human = messages[messages.is_human]
    assert len(human) == 1 and human.iloc[0].turn == 2
    interventions = read_table(campaign.ws.traces_dir, "interventions")
    assert list(interventions["source"]) == ["human"]


def test_hybrid_prefers_the_person_over_the_bank(tmp_path):
    campaign, backend, log = make(tmp_path, mode="hybrid", budget=Budget(turns=3))
    campaign.ask("Is the gain inside the noise?", question_id="q001")
    stopped = campaign.run()
    fired = log.of(InterventionFired)
    assert [(e.turn, e.source) for e in fired] == [(1, "human"), (3, "bank")]
    assert fired[0].question_id == "q001" and fired[0].layer == "measurement"
    assert stopped.reason == "budget_turns"


def test_stop_is_honoured_at_the_next_turn_boundary(tmp_path):
    campaign, backend, log = make(tmp_path)

    def stop_during_turn_two(event):
        if isinstance(event, ToolCallFinished) and event.turn == 2:
            campaign.stop()
    campaign.subscribe(stop_during_turn_two)
    stopped = campaign.run()
    assert stopped.reason == "stopped_by_user" and stopped.turn == 2
    assert [e.turn for e in log.of(TurnCommitted)] == [1, 2]


def test_tool_call_budget_answers_every_tool_use_and_stops(tmp_path):
    backend = FakeBackend([[call("run_harness"), call("list_files")], [call("run_harness"), call("run_harness")]])
    campaign, _, log = make(tmp_path, backend=backend, budget=Budget(tool_calls=3))
    stopped = campaign.run()
    assert stopped.reason == "budget_tool_calls" and stopped.tool_calls == 3
    last = campaign.messages[-1]["content"]
    assert [b.get("is_error", False) for b in last[:2]] == [False, True]
    assert "budget" in last[1]["content"]


def test_token_and_dollar_budgets(tmp_path):
    backend = FakeBackend([[call("list_files")]] * 10, usage=Usage(input_tokens=100, output_tokens=20))
    campaign, _, _ = make(tmp_path, backend=backend, budget=Budget(tokens=250))
    assert campaign.run().reason == "budget_tokens"
    backend = FakeBackend([[call("list_files")]] * 10, price_per_token=0.01)
    campaign, _, _ = make(tmp_path / "usd", backend=backend, budget=Budget(usd=2.5))
    stopped = campaign.run()
    assert stopped.reason == "budget_usd" and stopped.turn == 3 and stopped.cost_usd == pytest.approx(3.6)


def test_tool_errors_go_back_to_the_agent(tmp_path):
    backend = FakeBackend([[call("read_file", path="../../etc/passwd"), call("no_such_tool"),
                            call("edit_file", path="kernel.cu", old_string="absent", new_string="x")]])
    campaign, _, log = make(tmp_path, backend=backend, budget=Budget(turns=1))
    assert campaign.run().reason == "budget_turns"
    results = campaign.messages[-1]["content"]
    assert [b["is_error"] for b in results] == [True, True, True]
    assert "outside the campaign workspace" in results[0]["content"]
    assert "unknown tool" in results[1]["content"] and "not found" in results[2]["content"]


def test_evaluation_events_carry_the_result_frame(tmp_path):
    campaign, _, log = make(tmp_path)
    campaign.run()
    evals = log.of(EvaluationDone)
    assert [e.is_new_best for e in evals] == [True, False, False, True, True, True]
    frame = evals[-1].result.to_frame()
    assert len(frame) == 8 and set(frame["status"]) == {"passed"}
    assert log.events[-1].kind == "campaign_stopped" and isinstance(log.events[-1], CampaignStopped)


def test_budget_parsing():
    budget = Budget.parse("tool_calls=200, tokens=5e6, wall=90m, usd=$20, turns=50")
    assert (budget.tool_calls, budget.tokens, budget.wall_s, budget.usd, budget.turns) == (200, 5_000_000, 5400.0,
                                                                                          20.0, 50)
    assert Budget.parse("wall=2h").wall_s == 7200 and Budget.parse("wall=45").wall_s == 45
    assert Budget.parse("turns=3", base=Budget(tool_calls=7)).tool_calls == 7
    with pytest.raises(ValueError, match="budget item"):
        Budget.parse("forever")


def test_bad_cli_input_is_one_line(tmp_path, capsys):
    from workbench.agent.campaign_cli import campaign_main
    assert campaign_main(["--root", str(tmp_path), "--budget", "forever", "--agent", "offline",
                          "--evaluator", "standin"]) == 2
    assert campaign_main(["--root", str(tmp_path), "--kernel", "nope.cu", "--agent", "offline",
                          "--evaluator", "standin"]) == 2
    with pytest.raises(SystemExit) as refused:          # argparse reads the number: refused before anything
        campaign_main(["--root", str(tmp_path), "--min-gain", "0.5", "--agent", "offline", "--evaluator", "standin"])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "budget item" in err[0] and "kernel file 'nope.cu' not found" in err[1]
    assert "argument --min-gain: must be a number >= 1, got '0.5'" in err[2]
    assert not any(tmp_path.iterdir())


def test_worker_thread_start_and_stop(tmp_path):
    backend = FakeBackend([[call("list_files")]] * 50)
    campaign, _, log = make(tmp_path, backend=backend)
    campaign.stop()
    worker = campaign.start()
    worker.join(10)
    assert log.of(CampaignStopped)[0].reason == "stopped_by_user" and campaign.turn == 0


def test_a_bug_in_the_agent_still_ends_the_campaign_visibly(tmp_path):
    def broken(request):
        raise ZeroDivisionError("oops")
    campaign, _, log = make(tmp_path, backend=FakeBackend([[call("list_files")], broken]))
    stopped = campaign.run()
    assert stopped.reason == "internal_error" and "ZeroDivisionError: oops" in stopped.detail and stopped.turn == 1
    assert read_table(campaign.ws.traces_dir, "sessions").iloc[0].stop_reason.startswith("internal_error")
