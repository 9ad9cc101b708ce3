"""The shell form of an outside agent's campaign, as real subprocesses: `workbench check KERNEL --campaign ID`
prints the summary, then the question, then the stop condition, with `workbench check`'s exit codes; `workbench ask`
from another process reaches the next check; bad input is one line and exit 2. The questions are the ones the
service (and so the MCP server and the built-in loop) would ask for the same runs: one policy."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.agent.campaign_service import CampaignService
from workbench.agent.external_cli import check_main
from workbench.campaign.config import CampaignConfig
from workbench.evaluators.standin_timings import KnobEvaluator
from workbench.locks import hold_lock
from workbench.questions.policy import PolicyConfig
from workbench.traces.writer import read_table

ROOT = Path(__file__).resolve().parents[1]
KERNEL_A = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
KERNEL_B = KERNEL_A.replace("KEY_TILE 8 ", "KEY_TILE 16 ")
STOP = "all_correct and geomean_vs_original >= 1.3"          # kernel A: x1.06, kernel B: x1.42 (stand-in)
NEW = ["--new", "--kernel", "start.cu", "--suite", "smoke", "--mode", "hybrid", "--stop", STOP,
       "--evaluator", "standin", "--stall-runs", "2"]


def workbench(cwd, *args):
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                        "WORKBENCH_NO_GPU": "1"}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture
def campaign(tmp_path, monkeypatch, capsys):
    """campaigns/c-cli/ with one check, made in this process by the code a subprocess would run (faster)."""
    (tmp_path / "start.cu").write_text(KERNEL_A)
    monkeypatch.chdir(tmp_path)
    assert check_main(["kernel.cu", "--campaign", "c-cli", *NEW]) == 3      # evaluated, stop condition not met
    assert "1 harness run(s)" in capsys.readouterr().out
    return tmp_path


def test_check_in_a_campaign_from_the_shell(campaign):
    ws = campaign / "campaigns" / "c-cli"
    second = workbench(campaign, "check", "campaigns/c-cli/kernel.cu", "--campaign", "c-cli")
    stalled = workbench(ws, "check", "kernel.cu", "--campaign", "c-cli", "--root", "..")   # from inside the workspace
    assert second.returncode == 3 and "=== QUESTION" not in second.stdout
    assert stalled.returncode == 3, stalled.stderr
    out = stalled.stdout
    summary, question, stop = (out.index("geomean: x1.06 vs original"), out.index("=== QUESTION (stall; from the "
                                                                                     "question bank"),
                               out.index(f"stop condition ({STOP}): not met"))
    assert summary < question < stop                 # the question comes after the summary

    asked = workbench(campaign, "ask", "c-cli", "Which scenario is furthest from its memory floor?")
    assert asked.returncode == 0 and "1 question waiting" in asked.stdout
    (ws / "kernel.cu").write_text(KERNEL_B)
    done = workbench(campaign, "check", "kernel.cu", "--campaign", "c-cli", "--notes", "KEY_TILE 8 -> 16")
    assert done.returncode == 0, done.stdout          # the stop condition holds: exit 0, and no question
    assert "MET: the campaign is done" in done.stdout and "=== QUESTION" not in done.stdout

    bank = workbench(campaign, "ask", "c-cli", "--from-bank", "--trigger", "suspicious")
    # the waiting one first
    assert bank.returncode == 0 and "=== QUESTION (from a person; trigger suspicious) ===" in bank.stdout
    bank2 = workbench(campaign, "ask", "c-cli", "--from-bank", "--trigger", "suspicious")
    assert "=== QUESTION (suspicious; from the question bank" in bank2.stdout

    traces = ws / "traces"
    interventions = read_table(traces, "interventions").sort_values("turn")
    assert list(zip(interventions["trigger"], interventions["source"])) == [("stall", "bank"), ("suspicious", "human"),
                                                                            ("suspicious", "bank")]
    evaluations = read_table(traces, "evaluations")
    assert evaluations["eval_id"].nunique() == 4 and evaluations["kernel_sha"].nunique() == 2
    assert list(read_table(traces, "tool_calls").sort_values("turn")["tool_name"]) == ["check_kernel"] * 4 + [
        "ask_question"] * 2
    assert sorted(p.name for p in (ws / "artifacts").glob("*.cu")) == sorted(evaluations["kernel_sha"].unique() + ".cu")


def test_the_shell_and_the_service_ask_alike(campaign, tmp_path_factory):
    """The same runs through `workbench check --campaign` (subprocesses) and through CampaignService in this
    process (what `workbench mcp` calls) bring the same questions at the same calls."""
    for _ in range(4):
        workbench(campaign, "check", "kernel.cu", "--campaign", "c-cli")
    by_shell = read_table(campaign / "campaigns" / "c-cli" / "traces", "interventions").sort_values("turn")

    root = tmp_path_factory.mktemp("service")
    config = CampaignConfig(suite="smoke", mode="hybrid", stop_expr=STOP, root=str(root), campaign_id="c-svc",
                            policy=PolicyConfig(stall_runs=2))
    service = CampaignService.create(config, evaluator=KnobEvaluator(), kernel_text=KERNEL_A)
    with service.session("test"):
        for _ in range(5):
            service.check()
    by_service = read_table(service.ws.traces_dir, "interventions").sort_values("turn")
    assert len(by_shell) == 2
    assert list(zip(by_shell["turn"], by_shell["trigger"], by_shell["question_id"])) == list(
        zip(by_service["turn"], by_service["trigger"], by_service["question_id"]))


@pytest.mark.parametrize("args, why", [
    (["check", "kernel.cu", "--campaign", "nope"], "no campaign 'nope' under campaigns/"),
    (["check", "/etc/hostname", "--campaign", "c-cli"], "is outside the campaign workspace"),
    (["check", "../start.cu", "--campaign", "c-cli"], "is outside the campaign workspace"),
    (["check", "missing.cu", "--campaign", "c-cli"], "no such kernel file"),
    (["check", "kernel.cu", "--campaign", "c-cli", "--mode", "bank"], "was made with --mode 'hybrid'"),
    (["check", "kernel.cu", "--campaign", "c-cli", "--suite", "nope"], "no suite 'nope'"),
    (["check", "kernel.cu", "--campaign", "c-cli", *NEW], "already exists"),
    (["check", "kernel.cu", "--campaign", "c-2", *NEW[:-4], "--stop", "geomean >= 1"], "unknown name 'geomean'"),
    (["ask", "nope", "hello"], "no campaign 'nope'"),
    (["ask", "c-cli"], "give the question's text"),
    (["ask", "c-cli", "--from-bank", "--trigger", "bored"], "invalid choice"),
])
def test_bad_input_is_one_line_and_changes_nothing(campaign, args, why):
    traces = campaign / "campaigns" / "c-cli" / "traces"
    before = {t: len(read_table(traces, t)) for t in ("tool_calls", "evaluations", "interventions", "messages")}
    done = workbench(campaign, *args)
    assert done.returncode == 2 and why in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.startswith("workbench")]) == 1
    assert {t: len(read_table(traces, t)) for t in before} == before
    assert sorted(p.name for p in (campaign / "campaigns").iterdir()) == ["c-cli"]


def test_a_campaign_held_by_another_process_is_refused(campaign):
    ws = campaign / "campaigns" / "c-cli"
    with hold_lock(ws / ".lock", what="campaign c-cli"):     # e.g. `workbench mcp` serving it
        done = workbench(campaign, "check", "kernel.cu", "--campaign", "c-cli")
        asked = workbench(campaign, "ask", "c-cli", "Still there?")      # a person's question needs no lock
    assert done.returncode == 2 and "campaign c-cli is in use by pid" in done.stderr
    assert asked.returncode == 0
    assert read_table(ws / "traces", "evaluations")["eval_id"].nunique() == 1


def test_a_person_s_question_needs_a_mode_that_delivers_it(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL_A)
    new = [a if a != "hybrid" else "bank" for a in NEW]
    assert workbench(tmp_path, "check", "kernel.cu", "--campaign", "c-bank", *new).returncode == 3
    done = workbench(tmp_path, "ask", "c-bank", "hello")
    assert done.returncode == 2 and "mode bank" in done.stderr
    assert not (tmp_path / "campaigns" / "c-bank" / "inbox.jsonl").exists()
