"""`workbench mcp` as a real subprocess, driven by the mcp SDK's own stdio client (no mock of the protocol):
the tools are listed, check_kernel runs on CPU stand-in timings until a stall fires, a `workbench ask` from another
process reaches the next result as a person's question, bad input gets one line, and a second server on the same
campaign is refused without a trace row lost or duplicated."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from workbench.harness.result_line import parse_result_lines  # noqa: E402
from workbench.traces.writer import read_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KERNEL_A = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
KERNEL_B = KERNEL_A.replace("KEY_TILE 8 ", "KEY_TILE 16 ")      # x1.42 on the stand-in landscape (A: x1.06)
STOP = "all_correct and geomean_vs_original >= 50"
SMOKE_SCENARIOS = 8


def env() -> dict:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "WORKBENCH_NO_GPU": "1"}


def server_args(campaign="c-mcp", kernel="start.cu"):
    args = ["-m", "workbench.cli", "mcp", "--campaign", campaign, "--suite", "smoke", "--mode", "hybrid",
            "--stop", STOP, "--evaluator", "standin", "--stall-runs", "2"]
    return args + (["--kernel", kernel] if kernel else [])


def workbench(tmp_path, *args, stdin=subprocess.DEVNULL):
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], cwd=tmp_path, env=os.environ | env(),
                          capture_output=True, text=True, stdin=stdin, timeout=120)


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def test_a_campaign_over_mcp_stdio(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL_A)
    seen = {}

    async def session():
        params = StdioServerParameters(command=sys.executable, args=server_args(), env=env(), cwd=tmp_path)
        async with Client(params) as client:
            seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            seen["resources"] = {str(r.uri) for r in (await client.list_resources()).resources}
            seen["checks"] = [await client.call_tool("check_kernel", {}) for _ in range(3)]
            # a person types a question in another process; the next result carries it
            seen["ask"] = workbench(tmp_path, "ask", "c-mcp", "Is the softmax rescale on the critical path?")
            (tmp_path / "campaigns" / "c-mcp" / "kernel_b.cu").write_text(KERNEL_B)
            seen["checks"].append(await client.call_tool("check_kernel", {"path": "kernel_b.cu",
                                                                          "notes": "KEY_TILE 8 -> 16"}))
            # while this server runs, a second one on the same campaign is refused
            seen["second"] = workbench(tmp_path, *server_args()[2:])
            seen["outside"] = await client.call_tool("check_kernel", {"path": "/etc/passwd"})
            seen["missing"] = await client.call_tool("check_kernel", {"path": "nope.cu"})
            seen["status"] = await client.call_tool("campaign_status", {})
            seen["bank"] = await client.call_tool("list_questions", {"trigger": "stall"})
            seen["scenarios"] = await client.call_tool("list_scenarios", {})
            seen["suite"] = await client.read_resource("workbench://campaign/suite")

    anyio.run(session)

    assert {"check_kernel", "ask_question", "campaign_status", "list_questions", "list_scenarios"} <= set(seen["tools"])
    assert set(seen["tools"]["check_kernel"].input_schema["properties"]) == {"path", "suite", "claim", "notes"}
    assert {"workbench://campaign/bank", "workbench://campaign/suite",
            "workbench://campaign/status"} <= seen["resources"]
    first, second, third, fourth = [text(r) for r in seen["checks"]]
    assert not any(r.is_error for r in seen["checks"])
    for reply in (first, second, third, fourth):        # the stop condition is reported in every result
        assert f"stop condition ({STOP}): not met" in reply
    assert "=== QUESTION" not in first and "=== QUESTION" not in second
    assert "=== QUESTION (stall; from the question bank" in third and "=== END QUESTION ===" in third
    assert "no new best in 2 harness runs" in third
    assert seen["ask"].returncode == 0, seen["ask"].stderr
    assert "=== QUESTION (from a person) ===\nIs the softmax rescale on the critical path?" in fourth
    assert "best x1.422 vs original" in fourth          # kernel_b is the new best

    assert seen["second"].returncode == 2
    line = seen["second"].stderr.strip()
    assert len(line.splitlines()) == 1 and "campaign c-mcp is in use by pid" in line
    for key, why in (("outside", "outside the campaign workspace"), ("missing", "no such kernel file")):
        assert seen[key].is_error and why in text(seen[key])
        assert len(text(seen[key]).strip().splitlines()) == 1
    assert "last question: (human, human) Is the softmax rescale" in text(seen["status"])
    assert "4 harness run(s)" in text(seen["status"])
    assert "q0" in text(seen["bank"]) and "smoke" in seen["suite"].contents[0].text
    for listing in ("bank", "scenarios"):      # issue 27 item 9: the listings end with the stop condition too
        last = text(seen[listing]).strip().splitlines()[-1]
        assert last.startswith("campaign c-mcp: 4 harness run(s)") and f"stop condition ({STOP}): not met" in last

    traces = tmp_path / "campaigns" / "c-mcp" / "traces"
    evaluations = read_table(traces, "evaluations")
    assert evaluations["eval_id"].nunique() == 4 and len(evaluations) == 4 * SMOKE_SCENARIOS
    # each reply carries the harness's result line with the campaign's id: a transcript importer finds the run by it
    lines = [parse_result_lines(reply) for reply in (first, second, third, fourth)]
    assert all(len(found) == 1 and found[0]["campaign_id"] == "c-mcp" for found in lines)
    assert [found[0]["eval_id"] for found in lines] == list(evaluations.sort_values("turn")["eval_id"].unique())
    assert set(evaluations["session_id"]) == {"c-mcp"}
    interventions = read_table(traces, "interventions").sort_values("turn")
    assert list(zip(interventions["turn"], interventions["trigger"], interventions["source"])) == [
        (3, "stall", "bank"), (4, "human", "human")]
    calls = read_table(traces, "tool_calls")
    assert list(calls.sort_values("tool_index")["tool_name"]) == ["check_kernel"] * 4     # refused calls: no rows
    messages = read_table(traces, "messages")
    assert not messages.duplicated(["message_id", "block_index"]).any()
    human = messages[messages["is_human"]]
    assert list(human["text"]) == ["Is the softmax rescale on the critical path?"]
    session = read_table(traces, "sessions").iloc[0]
    assert session.agent == "external" and session.arm == "hybrid" and session.stop_reason.startswith("waiting")
    assert session.tool_calls == 4 and session.best_vs_original == pytest.approx(1.4217647, rel=1e-6)


def test_a_second_start_continues_the_campaign(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL_A)
    replies = []

    async def one_check():
        params = StdioServerParameters(command=sys.executable, args=server_args(), env=env(), cwd=tmp_path)
        async with Client(params) as client:
            replies.append(text(await client.call_tool("check_kernel", {})))

    anyio.run(one_check)
    anyio.run(one_check)            # the client restarts the server with the same command line
    assert "1 harness run(s)" in replies[0] and "2 harness run(s)" in replies[1]
    evaluations = read_table(tmp_path / "campaigns" / "c-mcp" / "traces", "evaluations")
    assert evaluations["eval_id"].nunique() == 2 and sorted(evaluations["turn"].unique()) == [1, 2]


@pytest.mark.parametrize("args, why", [
    (server_args(campaign="nope", kernel=None), "no campaign 'nope' under campaigns/"),
    (server_args(kernel="missing.cu"), "kernel missing.cu not found"),
    (server_args()[:-2] + ["--stop", "speed > 2", "--kernel", "start.cu"], "unknown name 'speed'"),
])
def test_bad_input_is_one_line_and_creates_nothing(tmp_path, args, why):
    (tmp_path / "start.cu").write_text(KERNEL_A)
    done = workbench(tmp_path, *args[2:])
    assert done.returncode == 2 and done.stdout == ""        # stdout is the protocol: nothing else goes there
    assert len(done.stderr.strip().splitlines()) == 1 and why in done.stderr
    assert not (tmp_path / "campaigns").exists() or not any((tmp_path / "campaigns").iterdir())


def test_the_h200_demo_script_runs_here_on_stand_in_timings(tmp_path):
    """scripts/mcp_campaign_demo.py is the H200 acceptance; with --evaluator standin it runs the same MCP session
    on a CPU (made-up timings), so a broken script is caught here rather than on the GPU."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "mcp_campaign_demo.py"), "--evaluator", "standin",
                           "--suite", "smoke", "--id", "demo-dry", "--root", str(tmp_path / "campaigns"),
                           "--out", str(out)], env=os.environ | env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("check_kernel ") == 3 and "=== QUESTION (from a person" in done.stdout
    assert (out / "demo-dry.tgz").stat().st_size > 0
    evaluations = read_table(out / "traces", "evaluations")
    assert evaluations["eval_id"].nunique() == 3 and evaluations["kernel_sha"].nunique() == 2
    assert set(read_table(out / "traces", "interventions")["source"]) == {"human", "bank"}
