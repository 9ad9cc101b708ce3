"""The claude backend against recorded Messages-API responses, through an httpx2 mock transport (no network).

anthropic 2.x sends its traffic through httpx2, so the mock is an httpx2.MockTransport given to the SDK as
`http_client`; respx and friends patch httpx and would never see a request."""
import json
from pathlib import Path

import pytest

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from workbench.agent.backends.claude import ClaudeBackend, cost_usd  # noqa: E402
from workbench.agent.backends.turns import BackendError, TurnRequest  # noqa: E402
from workbench.agent.loop import Campaign  # noqa: E402
from workbench.agent.tools import TOOL_SPECS  # noqa: E402
from workbench.campaign.config import Budget, CampaignConfig  # noqa: E402
from workbench.campaign.events import EventLog, InterventionFired, MessageDelta, Usage  # noqa: E402
from workbench.evaluators.standin_timings import SequenceEvaluator  # noqa: E402
from workbench.traces.writer import read_table  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
KEY = "sk-ant-api03-test-not-a-real-key-0000000000"


def recorded(name: str) -> httpx2.Response:
    raw = (FIXTURES / name).read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in header_lines]
    # the body is already de-chunked; the framing header would make the client expect chunks
    headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
    return httpx2.Response(int(status_line.split()[1]), headers=headers, content=body)


class Server:
    """Serves recorded responses in order and keeps every request."""

    def __init__(self, *names):
        self.names, self.requests = list(names), []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.names:
            return httpx2.Response(500, json={"type": "error",
                                              "error": {"type": "api_error", "message": "script over"}})
        return recorded(self.names.pop(0))

    def body(self, i: int) -> dict:
        return json.loads(self.requests[i].content)


def backend_for(server: Server, **kw) -> ClaudeBackend:
    client = httpx2.Client(transport=httpx2.MockTransport(server))
    return ClaudeBackend(api_key=KEY, http_client=client, sleep=lambda s: None, **kw)


def request(messages=None):
    return TurnRequest("You optimise a kernel.", TOOL_SPECS,
                       messages or [{"role": "user", "content": [{"type": "text", "text": "Begin."}]}], 1)


def test_text_stream():
    server = Server("text_turn.http")
    deltas = []
    turn = backend_for(server).next_turn(request(), lambda i, t: deltas.append((i, t)))
    assert turn.stop_reason == "end_turn" and turn.tool_uses == []
    assert "".join(t for _, t in deltas) == turn.text and turn.text.startswith("The geomean is x1.84")
    assert len(deltas) == 6 and {i for i, _ in deltas} == {0}
    assert turn.usage == Usage(input_tokens=3120, output_tokens=41) and turn.message_id == "msg_01TextTurn7d1kq2HcYz"
    assert turn.cost_usd == pytest.approx((3120 * 3 + 41 * 15) / 1e6)


def test_request_caches_system_and_last_tool_and_streams():
    server = Server("text_turn.http")
    backend_for(server, model="claude-sonnet-4-6").next_turn(request(), lambda i, t: None)
    body = server.body(0)
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-6"
    assert body["system"] == [{"type": "text", "text": "You optimise a kernel.",
                               "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert body["tools"][-1]["cache_control"]["type"] == "ephemeral"
    assert all("cache_control" not in t for t in body["tools"][:-1])
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in TOOL_SPECS]
    assert body["messages"][-1]["content"][-1]["cache_control"]["type"] == "ephemeral"
    assert "cache_control" not in TOOL_SPECS[-1]                      # the shared specs are not mutated
    assert server.requests[0].url.path == "/v1/messages"


def test_tool_use_with_streamed_json_input():
    server = Server("tool_use_turn.http")
    turn = backend_for(server).next_turn(request(), lambda i, t: None)
    assert turn.stop_reason == "tool_use"
    [use] = turn.tool_uses
    assert use["id"] == "toolu_01EditKeyTile4Hs2" and use["name"] == "edit_file"
    assert use["input"]["new_string"].endswith('// "deeper" key tile: more loads in flight')
    assert "\n" in use["input"]["new_string"]
    assert turn.usage.cache_write_tokens == 3988
    assert turn.content[0] == {"type": "text", "text": "Raising the key tile to 16 so each step keeps more K/V "
                                                       "loads in flight."}


def test_several_tool_calls_in_one_turn():
    server = Server("parallel_tools_turn.http")
    turn = backend_for(server).next_turn(request(), lambda i, t: None)
    assert [u["name"] for u in turn.tool_uses] == ["compile_report", "run_harness", "list_files"]
    assert turn.tool_uses[1]["input"] == {"path": "kernel.cu", "suite": "smoke"}
    assert turn.tool_uses[2]["input"] == {}
    assert turn.usage.cache_read_tokens == 3988


def test_rate_limit_429_then_success():
    server = Server("rate_limit_429.http", "text_turn.http")
    turn = backend_for(server).next_turn(request(), lambda i, t: None)
    assert turn.stop_reason == "end_turn" and len(server.requests) == 2
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_overloaded_529_is_retried():
    server = Server("overloaded_529.http", "tool_use_turn.http")
    assert backend_for(server).next_turn(request(), lambda i, t: None).tool_uses
    assert len(server.requests) == 2


def test_overloaded_error_inside_a_stream_is_retried_by_the_backend():
    server = Server("overloaded_midstream.http", "text_turn.http")
    turn = backend_for(server).next_turn(request(), lambda i, t: None)
    assert turn.text.startswith("The geomean") and len(server.requests) == 2


def test_persistent_overload_becomes_one_readable_backend_error():
    server = Server(*["overloaded_midstream.http"] * 3)
    with pytest.raises(BackendError) as err:
        backend_for(server, stream_retries=2).next_turn(request(), lambda i, t: None)
    assert "overloaded_error" in str(err.value) and "\n" not in str(err.value)
    assert len(server.requests) == 3


def test_base_url_points_at_a_compatible_server_without_a_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    server = Server("text_turn.http")
    client = httpx2.Client(transport=httpx2.MockTransport(server))
    backend = ClaudeBackend(base_url="http://localhost:8000", http_client=client, model="qwen3-coder")
    backend.next_turn(request(), lambda i, t: None)
    assert server.requests[0].url.host == "localhost" and server.requests[0].url.port == 8000
    assert server.body(0)["model"] == "qwen3-coder"


def test_missing_key_is_one_line(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY is not set"):
        ClaudeBackend()


def test_cost_of_cache_reads_and_writes():
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=10_000, cache_write_tokens=2000)
    assert cost_usd("claude-sonnet-4-6", usage, "1h") == pytest.approx((1000 * 3 + 100 * 15 + 10_000 * 0.3
                                                                        + 2000 * 6) / 1e6)
    assert cost_usd("some-local-model", usage) is None


def test_a_campaign_through_the_claude_backend(tmp_path):
    """Turn 1 streams an edit_file call; turn 2 ends its turn: the claim trigger puts a bank question as the
    last block of the next request's messages; tokens and cost are recorded per turn."""
    kernel = "#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
    server = Server("tool_use_turn.http", "text_turn.http", "parallel_tools_turn.http")
    config = CampaignConfig(suite="smoke", mode="bank", root=str(tmp_path), campaign_id="c-claude", agent="claude",
                            stop_expr="all_correct and geomean_vs_original >= 100", budget=Budget(turns=3))
    campaign = Campaign.create(config, backend_for(server), evaluator=SequenceEvaluator([1.0]), kernel_text=kernel)
    log = EventLog()
    campaign.subscribe(log)
    stopped = campaign.run()
    assert stopped.reason == "budget_turns" and stopped.turn == 3
    assert "#define KEY_TILE 16 " in campaign.ws.kernel_path.read_text()

    first = server.body(0)["messages"]
    assert [m["role"] for m in first] == ["user"] and "Make kernel.cu faster" in first[0]["content"][0]["text"]
    second = server.body(1)["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"][1]["id"] == "toolu_01EditKeyTile4Hs2"
    result = second[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01EditKeyTile4Hs2"
    assert "edited kernel.cu" in result["content"]
    third = server.body(2)["messages"]
    [fired] = log.of(InterventionFired)
    assert fired.turn == 2 and fired.trigger == "claim"
    assert third[-1]["role"] == "user" and third[-1]["content"][-1]["text"] == fired.text
    assert len(log.of(MessageDelta)) >= 8

    messages = read_table(campaign.ws.traces_dir, "messages")
    first_blocks = messages[(messages.role == "assistant") & (messages.block_index == 0)].sort_values("turn")
    assert list(first_blocks["input_tokens"]) == [4410, 3120, 612]
    assert list(first_blocks["cache_write_tokens"]) == [3988, 0, 0]
    assert first_blocks["cost_usd"].notna().all() and stopped.cost_usd == pytest.approx(first_blocks["cost_usd"].sum())
    assert stopped.tokens == sum([4410 + 122 + 3988, 3120 + 41, 612 + 96 + 3988])
