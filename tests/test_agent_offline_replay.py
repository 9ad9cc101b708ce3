"""The offline scripted agent really edits knobs and follows the question's layer; a recorded campaign replays
anywhere; the CLI says in one line what it does without an API key and a GPU; the experiment table."""
import shutil
from pathlib import Path

import pytest

from workbench.agent import campaign_cli as cli
from workbench.agent.backends.offline import ScriptedAgent
from workbench.agent.backends.replay import ReplayBackend
from workbench.agent.backends.turns import TurnRequest
from workbench.agent.loop import Campaign
from workbench.agent.tools import TOOL_SPECS
from workbench.campaign.config import Budget, CampaignConfig
from workbench.campaign.events import EvaluationDone, EventLog, InterventionFired, ToolCallFinished, TriggerDetected
from workbench.evaluators.standin_timings import KnobEvaluator
from workbench.harness.paths import REPO_ROOT
from workbench.knobs import knob_layer, parse_knobs
from workbench.questions.policy import PolicyConfig

KERNEL = """// a toy kernel with three knobs
#define ROWS_PER_BLOCK 1    // @knob ROWS_PER_BLOCK 1 {1,2}
#define KEY_TILE 1          // @knob KEY_TILE 1 {1,2}
#define EXP_MODE x          // @knob EXP_MODE x {x,y} layer=numerics
int body;
"""


def landscape(config):
    """Each knob alone barely matters or hurts; ROWS_PER_BLOCK=2 with KEY_TILE=2 together triples the speed."""
    a, b, c = config["ROWS_PER_BLOCK"], config["KEY_TILE"], config["EXP_MODE"]
    base = 3.0 if (a, b) == ("2", "2") else (0.9 if "2" in (a, b) else 1.0)
    return base * (1.1 if c == "y" else 1.0)


def test_parse_knobs_and_layers():
    knobs = parse_knobs(KERNEL)
    assert list(knobs) == ["ROWS_PER_BLOCK", "KEY_TILE", "EXP_MODE"]
    assert knobs["KEY_TILE"]["choices"] == ["1", "2"] and knobs["KEY_TILE"]["value"] == "1"
    assert [k["layer"] for k in knobs.values()] == ["parallelism", "pipelining", "numerics"]
    assert knob_layer("DIMS_PER_LANE") == "memory" and knob_layer("UNROLL_K") == "tensor-core/instructions"


def test_the_real_original_kernel_declares_knobs():
    original = REPO_ROOT / "kernels" / "attn_fwd" / "original.cu"
    if not original.exists():
        pytest.skip("original.cu not written yet")
    knobs = parse_knobs(original.read_text())
    assert knobs and all(k["value"] in k["choices"] for k in knobs.values())


@pytest.mark.parametrize("rung", sorted((REPO_ROOT / "kernels" / "attn_fwd" / "ladder").glob("*.cu")),
                         ids=lambda p: p.stem)
def test_every_ladder_rung_declares_knobs_whose_defaults_are_among_their_choices(rung):
    # an evolution or agent edit starts from the default: one outside its own choice list is a typo in the rung
    knobs = parse_knobs(rung.read_text())
    bad = {name: (k["value"], k["choices"]) for name, k in knobs.items() if k["value"] not in k["choices"]}
    assert not bad, f"{rung.name}: defaults outside their choices: {bad}"


def run_offline(tmp_path, mode, cid):
    config = CampaignConfig(suite="smoke", mode=mode, root=str(tmp_path), campaign_id=cid, agent="offline",
                            stop_expr="all_correct and geomean_vs_original >= 3.2", budget=Budget(turns=30),
                            policy=PolicyConfig(stall_runs=10))
    evaluator = KnobEvaluator(landscape)
    campaign = Campaign.create(config, ScriptedAgent(), evaluator=evaluator, kernel_text=KERNEL)
    log = EventLog()
    campaign.subscribe(log)
    return campaign, campaign.run(), log, evaluator


def test_offline_agent_edits_knobs_through_tools_and_gets_past_a_plateau(tmp_path):
    campaign, stopped, log, evaluator = run_offline(tmp_path, "bank", "off-bank")
    assert stopped.reason == "stop_condition_met"
    assert stopped.best_vs_original == pytest.approx(3.3)
    final = parse_knobs(campaign.ws.kernel_path.read_text())
    assert {n: k["value"] for n, k in final.items()} == {"ROWS_PER_BLOCK": "2", "KEY_TILE": "2", "EXP_MODE": "y"}
    names = {e.name for e in log.of(ToolCallFinished)}
    assert {"read_file", "edit_file", "run_harness"} <= names
    assert not any(e.is_error for e in log.of(ToolCallFinished))
    judged = {Path(r.kernel_path) for r in evaluator.requests}      # the harness judges saved artifacts only
    assert judged <= set(campaign.ws.artifacts_dir.glob("*.cu")) and len(judged) >= 5
    # it claimed a plateau (single-knob moves exhausted) and was asked a question before the pair that won
    claims = [e for e in log.of(InterventionFired) if e.trigger == "claim"]
    best_turn = next(e.turn for e in log.of(EvaluationDone) if e.best_vs_original and e.best_vs_original > 3)
    assert claims and claims[0].turn < best_turn


def test_offline_agent_follows_the_layer_of_the_last_question():
    read = {"type": "tool_result", "tool_use_id": "toolu_offline_00001", "content": KERNEL}
    run = {"type": "tool_result", "tool_use_id": "toolu_offline_00002",
           "content": 'RESULT_JSON {"kernel_sha": "ab", "all_correct": true, "geomean_vs_original": 1.0}'}

    def first_edit(questions):
        agent = ScriptedAgent()
        agent.next_turn(TurnRequest("", TOOL_SPECS, [], 1), lambda i, t: None)
        reply = agent.next_turn(TurnRequest("", TOOL_SPECS, [{"role": "user", "content": [read, run]}], 2, questions),
                                lambda i, t: None)
        return reply.tool_uses[0]

    assert "ROWS_PER_BLOCK" in first_edit([])["input"]["old_string"]
    assert "KEY_TILE" in first_edit([{"layer": "pipelining", "question_id": "q033"}])["input"]["old_string"]
    assert "EXP_MODE" in first_edit([{"layer": "numerics", "question_id": "q045"}])["input"]["old_string"]
    remeasure = first_edit([{"layer": "measurement", "question_id": "q001"}])
    assert remeasure["name"] == "run_harness"


def test_tools_only_offline_arm_runs_without_questions(tmp_path):
    campaign, stopped, log, _ = run_offline(tmp_path, "tools_only", "off-tools")
    assert stopped.reason == "stop_condition_met" and log.of(InterventionFired) == []
    assert any(e.trigger == "claim" for e in log.of(TriggerDetected))


def test_replay_reproduces_a_recorded_campaign_without_its_evaluator(tmp_path):
    original, stopped, log, _ = run_offline(tmp_path, "bank", "recorded")
    backend = ReplayBackend.from_spec(str(original.ws.root))
    assert backend.config()["suite"] == "smoke" and backend.initial_kernel() == KERNEL
    config = CampaignConfig(suite="smoke", mode="bank", root=str(tmp_path / "replays"), campaign_id="replayed",
                            agent="replay", stop_expr=original.config.stop_expr, budget=Budget(turns=30),
                            policy=PolicyConfig(stall_runs=10))
    replayed = Campaign.create(config, backend, kernel_text=backend.initial_kernel())
    replay_log = EventLog()
    replayed.subscribe(replay_log)
    again = replayed.run()
    assert again.reason == "stop_condition_met" and again.turn == stopped.turn
    assert [e.name for e in replay_log.of(ToolCallFinished)] == [e.name for e in log.of(ToolCallFinished)]
    assert [round(e.geomean_vs_original, 6) for e in replay_log.of(EvaluationDone)] == \
        [round(e.geomean_vs_original, 6) for e in log.of(EvaluationDone)]
    assert replayed.ws.kernel_path.read_text() == original.ws.kernel_path.read_text()
    assert [e.question_id for e in replay_log.of(InterventionFired)] == \
        [e.question_id for e in log.of(InterventionFired)]


def test_cli_without_key_or_gpu_replays_the_sample_and_says_so(tmp_path, monkeypatch, capsys):
    original, _, _, _ = run_offline(tmp_path, "bank", "sample")
    sample = tmp_path / "data" / "traces"
    shutil.copytree(original.ws.traces_dir, sample)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("WORKBENCH_NO_GPU", "1")
    monkeypatch.setattr(cli, "SAMPLE_TRACES", sample)
    code = cli.campaign_main(["--root", str(tmp_path / "runs"), "--suite", "smoke", "--budget", "turns=3"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].startswith("no ANTHROPIC_API_KEY and no GPU: the offline agent needs a GPU") and "replays" in out[0]
    assert any(line.startswith("[turn 1] agent:") for line in out) and out[-1].startswith("stopped: budget_turns")

    monkeypatch.setattr(cli, "SAMPLE_TRACES", tmp_path / "empty")
    assert cli.campaign_main(["--root", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no sample campaign" in err[0]
    assert cli.campaign_main(["--root", str(tmp_path / "runs"), "--agent", "offline"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a GPU" in err[0] and "replay" in err[0]


def test_cli_log_shows_turns_tools_results_and_questions(tmp_path, capsys):
    code = cli.campaign_main(["--root", str(tmp_path), "--suite", "smoke", "--agent", "offline", "--evaluator",
                              "standin", "--budget", "turns=8", "--stall-runs", "2", "--id", "log-demo"])
    out = capsys.readouterr().out
    assert code == 0
    assert "campaign log-demo starting" in out and "[turn 1] agent:" in out and "-> #1 read_file" in out
    assert "= " in out and "NEW BEST" in out and "? question (stall, bank q" in out
    assert "stopped: budget_turns" in out


def test_experiment_prints_the_paper_style_table(tmp_path, capsys):
    code = cli.experiment_main(["--modes", "tools_only,bank", "--repeats", "2", "--agent", "offline",
                                "--evaluator", "standin", "--suite", "smoke", "--root", str(tmp_path),
                                "--budget", "turns=10", "--stall-runs", "2"])
    out = capsys.readouterr().out
    assert code == 0
    table = out[out.index("arm "):]
    assert "best x FA3" in table and "tool calls" in table
    rows = [line.split() for line in table.splitlines() if line.startswith(("tools_only", "bank"))]
    assert [r[0] for r in rows] == ["tools_only", "bank"] and all(r[1] == "2" for r in rows)
    assert len(list(tmp_path.glob("exp-*"))) == 4 and list(tmp_path.glob("experiment-*.json"))
    assert cli.experiment_main(["--modes", "human"]) == 2


def test_offline_agent_does_not_count_a_run_the_budget_stopped():
    from workbench.agent.backends.offline import ScriptedAgent
    agent = ScriptedAgent()
    config = {"KEY_TILE": "16"}
    agent.s.update(knobs={"KEY_TILE": {"choices": ["8", "16"], "layer": "pipelining"}}, current={"KEY_TILE": "8"},
                   pending=[{"kind": "run", "config": config, "id": "t1"}])
    agent._absorb({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                "content": "not run: the campaign's tool-call budget is spent"}]})
    assert agent.s["tried"] == {} and agent.s["pending"] == []


def test_the_h200_sample_campaign_replays_every_run_in_recorded_order(tmp_path, capsys):
    # data/campaigns/c-offline-1: the offline agent on the H200 (2026-11-30); it re-timed its best kernel twice
    recording = REPO_ROOT / "data" / "campaigns" / "c-offline-1"
    recorded = ReplayBackend.from_spec(str(recording))
    frame = recorded.evaluator.frame.drop_duplicates("eval_id").sort_values("ts", kind="stable")
    code = cli.campaign_main(["--root", str(tmp_path), "--agent", f"replay:{recording}"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and out[-1].startswith("stopped: agent_finished") and "after 97 turns, 58 tool calls" in out[-1]
    runs = [line.split(";")[0].strip() for line in out if line.strip().startswith("= ")]
    log = (REPO_ROOT / "docs" / "data" / "h200_campaign_c-offline-1_2026-11-30.log").read_text().splitlines()
    assert runs == [line.split(";")[0].strip() for line in log if line.strip().startswith("= ")]   # as on the H200
    assert len(runs) == len(frame) == 28
    assert sum(r.startswith("= d0c279d34a") for r in runs) > 2      # the best kernel, re-timed: each run in order
