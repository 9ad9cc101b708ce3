"""`workbench mcp` as an outside client written from the SDK alone sees it (issue 27 item 11, issue 25 item 15): the
real server over stdio, driven by the mcp SDK's own client. Described arguments and enums, tool annotations, no
empty prompts capability, structured results, progress notifications during a check, `isError` on every failed
call; the `suite` argument confined like `path` (no outside CSV read or quoted, one answer for a missing and an
existing outside file, no FIFO or /dev/stdin opened, a FIFO does not hang the call or keep the lock); a line that
is not JSON-RPC gets a JSON-RPC error reply."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from workbench.traces.writer import read_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
STOP = "all_correct and geomean_vs_original >= 50"
SECRET_ROW = "shape,leak_me_not,2,2,64,64,64,0,bf16,A"     # a bad batch value: an error would quote it


def env() -> dict:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "WORKBENCH_NO_GPU": "1"}


def server_args(campaign="c-conv"):
    return ["-m", "workbench.cli", "mcp", "--campaign", campaign, "--suite", "smoke", "--mode", "hybrid", "--stop",
            STOP, "--evaluator", "standin", "--kernel", "start.cu"]


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def one_line_error(result) -> str:
    assert result.is_error is True, text(result)
    line = text(result).strip()
    assert len(line.splitlines()) == 1, line
    return line


def test_schemas_annotations_capabilities_structured_results_and_progress(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL)
    seen = {"progress": []}

    async def on_progress(progress, total, message):
        seen["progress"].append((progress, message))

    async def session():
        params = StdioServerParameters(command=sys.executable, args=server_args(), env=env(), cwd=tmp_path)
        async with Client(params) as client:
            seen["capabilities"] = client.server_capabilities
            seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            seen["check"] = await client.call_tool("check_kernel", {"notes": "first look"},
                                                   progress_callback=on_progress)
            seen["ask"] = await client.call_tool("ask_question", {"trigger": "stall"})
            seen["bad_trigger"] = await client.call_tool("ask_question", {"trigger": "bored"})
            seen["status"] = await client.call_tool("campaign_status", {})

    anyio.run(session)
    tools = seen["tools"]
    for tool in tools.values():
        assert tool.description and tool.annotations is not None, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["ask_question"].input_schema["properties"]["trigger"]["enum"] == ["stall", "claim", "suspicious",
                                                                                   "any"]
    assert set(tools["list_questions"].input_schema["properties"]["trigger"]["enum"]) == {"", "stall", "claim",
                                                                                         "suspicious", "any"}
    assert tools["check_kernel"].annotations.read_only_hint is False
    assert tools["check_kernel"].annotations.destructive_hint is False
    assert all(tools[name].annotations.read_only_hint for name in ("campaign_status", "list_questions",
                                                                  "list_scenarios"))
    assert seen["capabilities"].prompts is None and seen["capabilities"].tools is not None
    assert "stop_met" in json.dumps(tools["check_kernel"].output_schema)

    check = seen["check"]
    assert check.is_error is False
    data = check.structured_content
    assert data["status"] == "evaluated" and data["all_correct"] is True and len(data["kernel_sha"]) == 64
    assert data["stop_met"] is False and data["standing"]["harness_runs"] == 1
    assert data["geomean_vs_original"] == pytest.approx(data["result"]["geomeans"]["overall"]["original"])
    assert f"stop condition ({STOP}): not met" in text(check)
    # progress notifications while the check ran, counting up, each with the line a person's terminal shows
    assert len(seen["progress"]) >= 2
    assert [p for p, _ in seen["progress"]] == sorted(p for p, _ in seen["progress"])
    assert all(message for _, message in seen["progress"])
    assert seen["ask"].structured_content["question"]["source"] == "bank"
    # arguments the schema refuses are refused by the SDK itself, before the service: an error, never a result
    assert seen["bad_trigger"].is_error is True and "'stall'" in text(seen["bad_trigger"])
    assert seen["status"].structured_content["tool_calls"] == 2


def test_failed_calls_are_errors_and_the_suite_stays_inside(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL)
    (tmp_path / "outside.csv").write_text("name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,"
                                          "category\n" + SECRET_ROW + "\n")
    workspace = tmp_path / "campaigns" / "c-conv"
    seen = {}

    async def session():
        params = StdioServerParameters(command=sys.executable, args=server_args(), env=env(), cwd=tmp_path)
        async with Client(params) as client:
            (workspace / "latin1.cu").write_bytes("// caf\xe9\nint x;\n".encode("latin-1"))
            os.mkfifo(workspace / "pipe.csv")
            calls = {
                "latin": ("check_kernel", {"path": "latin1.cu"}),
                "long": ("check_kernel", {"path": "k" * 300 + ".cu"}),
                "notes": ("check_kernel", {"notes": "x" * 2_000_000}),
                "existing": ("check_kernel", {"suite": str(tmp_path / "outside.csv")}),
                "missing": ("check_kernel", {"suite": str(tmp_path / "missing.csv")}),
                "relative": ("check_kernel", {"suite": "../../outside.csv"}),
                "stdin": ("check_kernel", {"suite": "/dev/stdin"}),
                "list_outside": ("list_scenarios", {"suite": str(tmp_path / "outside.csv")}),
            }
            for key, (tool, args) in calls.items():
                seen[key] = await client.call_tool(tool, args)
            started = time.monotonic()
            with anyio.fail_after(60):       # a FIFO must neither hang this call nor keep the service's lock
                seen["fifo"] = await client.call_tool("check_kernel", {"suite": "pipe.csv"})
                seen["after"] = await client.call_tool("check_kernel", {})
            seen["fifo_s"] = time.monotonic() - started
            seen["status"] = await client.call_tool("campaign_status", {})

    anyio.run(session)
    assert "not UTF-8" in one_line_error(seen["latin"])
    assert "255" in one_line_error(seen["long"])
    assert seen["notes"].is_error is True and "20000" in text(seen["notes"])     # the schema's maxLength
    outside = [one_line_error(seen[k]) for k in ("existing", "missing", "list_outside")]
    assert all("files elsewhere are not read" in line for line in outside)
    # the same answer whether or not the outside file exists, and nothing of it quoted
    assert outside[0].replace("outside.csv", "X") == outside[1].replace("missing.csv", "X")
    assert all("leak_me_not" not in line for line in outside)
    assert "files elsewhere are not read" in one_line_error(seen["relative"])
    assert "files elsewhere are not read" in one_line_error(seen["stdin"])
    assert "not a regular file" in one_line_error(seen["fifo"])
    assert seen["after"].is_error is False and "1 harness run(s)" in text(seen["after"])
    # refused calls cost no turn and no budget, and leave no row
    assert seen["status"].structured_content["tool_calls"] == 1
    assert len(read_table(workspace / "traces", "tool_calls")) == 1


def _read_reply(proc, timeout_s: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout_s
    buffer = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            if b"\n" in buffer:
                return json.loads(buffer.split(b"\n", 1)[0])
    raise AssertionError(f"no reply within {timeout_s} s (got {buffer!r})")


def test_a_line_that_is_not_json_rpc_gets_an_error_reply(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL)
    proc = subprocess.Popen([sys.executable, *server_args()], cwd=tmp_path, env=os.environ | env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(b"{this is not json\n")
        proc.stdin.flush()
        parse = _read_reply(proc)
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": 12}\n')
        proc.stdin.flush()
        invalid = _read_reply(proc)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert parse["jsonrpc"] == "2.0" and parse["id"] is None and parse["error"]["code"] == -32700
    assert invalid["id"] == 7 and invalid["error"]["code"] == -32600
    assert proc.returncode == 0
