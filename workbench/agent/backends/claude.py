"""The claude backend: the anthropic SDK's Messages API, streaming, with tool use and prompt caching.

* Streaming: text deltas go to `on_text` as they arrive; the final message (content, usage) comes from the
  SDK's stream accumulator, so tool_use inputs streamed as `input_json_delta` arrive parsed.
* Prompt caching: `cache_control` on the system prompt, on the last tool, and on the last block of the
  conversation (the growing prefix is reused turn after turn). The TTL defaults to 1 h because one harness
  run on the GPU can outlast the default 5 minutes.
* Retries: HTTP-level 429 / 5xx / 529 are retried by the SDK (`max_retries`, honouring retry-after); an error
  event inside a stream (e.g. `overloaded_error` after the response started) is retried here, `stream_retries`
  times with backoff. What still fails becomes BackendError with one readable line.
* `base_url` points the same requests at an Anthropic-compatible server (vLLM, llama.cpp server, Ollama);
  there an API key is optional. `http_client` (an httpx2.Client) is how tests inject a mock transport.
"""
from __future__ import annotations

import copy
import os
import time
from typing import Callable, Optional

from workbench.agent.backends.turns import AssistantTurn, BackendError, TurnRequest
from workbench.campaign.events import Usage

DEFAULT_MODEL = os.environ.get("WORKBENCH_MODEL", "claude-sonnet-4-6")
DEFAULT_MAX_TOKENS = 16_000
# USD per million tokens (input, output), by model-name prefix; longest prefix wins. Cache writes cost 1.25x
# (5 min TTL) or 2x (1 h) the input price, cache reads 0.1x. Unknown models get no cost (and no $ budget);
# WORKBENCH_PRICE_PER_MTOK="IN,OUT" sets the price of a model missing here.
PRICES_PER_MTOK = {
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4-0": (15.0, 75.0),
    "claude-opus-4-2": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
}
CACHE_WRITE_FACTOR = {"5m": 1.25, "1h": 2.0}
CACHE_READ_FACTOR = 0.1
RETRYABLE_ERROR_TYPES = ("overloaded_error", "api_error", "rate_limit_error", "timeout_error")


def price_for(model: str) -> Optional[tuple[float, float]]:
    env = os.environ.get("WORKBENCH_PRICE_PER_MTOK")      # "3,15" for a model not in the table
    if env:
        inp, out = (float(x) for x in env.split(","))
        return inp, out
    matches = [p for p in PRICES_PER_MTOK if model.startswith(p)]
    return PRICES_PER_MTOK[max(matches, key=len)] if matches else None


def cost_usd(model: str, usage: Usage, cache_ttl: str = "1h") -> Optional[float]:
    price = price_for(model)
    if price is None:
        return None
    inp, out = price
    return (usage.input_tokens * inp + usage.output_tokens * out
            + usage.cache_write_tokens * inp * CACHE_WRITE_FACTOR.get(cache_ttl, 1.25)
            + usage.cache_read_tokens * inp * CACHE_READ_FACTOR) / 1e6


def block_to_param(block) -> Optional[dict]:
    """An SDK content block back to the exact request form (extra SDK fields would be rejected)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return None


class ClaudeBackend:
    name = "claude"

    def __init__(self, model: str | None = None, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, timeout_s: float = 600.0, max_retries: int = 4,
                 stream_retries: int = 3, cache_ttl: str = "1h", http_client=None,
                 sleep: Callable[[float], None] = time.sleep):
        self.model = model or DEFAULT_MODEL
        self.max_tokens, self.cache_ttl = max_tokens, cache_ttl
        self.stream_retries, self.sleep = stream_retries, sleep
        try:
            import anthropic
        except ModuleNotFoundError as err:
            raise BackendError("the claude agent needs the anthropic package: pip install 'anthropic>=2'") from err
        self._anthropic = anthropic
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key and not base_url and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            raise BackendError("ANTHROPIC_API_KEY is not set: export it, or use --agent offline / replay:PATH")
        self.client = anthropic.Anthropic(api_key=api_key or "none", base_url=base_url, timeout=timeout_s,
                                          max_retries=max_retries, http_client=http_client)

    # ---- request ---------------------------------------------------------------------------------------
    def _cache(self) -> dict:
        return {"type": "ephemeral", "ttl": self.cache_ttl} if self.cache_ttl != "5m" else {"type": "ephemeral"}

    def build_params(self, request: TurnRequest) -> dict:
        tools = copy.deepcopy(request.tools)
        if tools:
            tools[-1]["cache_control"] = self._cache()
        messages = list(request.messages)
        if messages and isinstance(messages[-1].get("content"), list) and messages[-1]["content"]:
            last = copy.deepcopy(messages[-1])
            last["content"][-1]["cache_control"] = self._cache()
            messages[-1] = last
        return {"model": self.model, "max_tokens": self.max_tokens, "tools": tools, "messages": messages,
                "system": [{"type": "text", "text": request.system, "cache_control": self._cache()}]}

    # ---- one turn --------------------------------------------------------------------------------------
    def next_turn(self, request: TurnRequest, on_text) -> AssistantTurn:
        params = self.build_params(request)
        anthropic = self._anthropic
        for attempt in range(self.stream_retries + 1):
            try:
                with self.client.messages.stream(**params) as stream:
                    index = -1
                    for event in stream:
                        if event.type == "content_block_start":
                            index = event.index
                        elif event.type == "text":
                            on_text(index, event.text)
                    message = stream.get_final_message()
                break
            except anthropic.APIStatusError as err:
                if attempt < self.stream_retries and _retryable(err):
                    self.sleep(min(2.0 ** attempt, 30.0))
                    continue
                raise BackendError(f"Anthropic API error {err.status_code} ({_error_type(err)}): "
                                   f"{_error_message(err)}") from err
            except (anthropic.APIConnectionError, anthropic.APITimeoutError) as err:
                if attempt < self.stream_retries:
                    self.sleep(min(2.0 ** attempt, 30.0))
                    continue
                raise BackendError(f"cannot reach the Anthropic API: {type(err).__name__}: {err}") from err
        u = message.usage
        usage = Usage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                      cache_read_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
                      cache_write_tokens=getattr(u, "cache_creation_input_tokens", None) or 0)
        content = [p for p in (block_to_param(b) for b in message.content) if p is not None]
        return AssistantTurn(content=content, stop_reason=message.stop_reason or "end_turn", usage=usage,
                             model=message.model or self.model, message_id=message.id,
                             cost_usd=cost_usd(self.model, usage, self.cache_ttl))

    def snapshot(self) -> dict:
        return {}

    def restore(self, snap: dict) -> None:
        pass


def _error_type(err) -> str:
    body = err.body if isinstance(getattr(err, "body", None), dict) else {}
    return (body.get("error") or {}).get("type") or body.get("type") or type(err).__name__


def _error_message(err) -> str:
    body = err.body if isinstance(getattr(err, "body", None), dict) else {}
    return ((body.get("error") or {}).get("message") or str(err)).splitlines()[0][:300]


def _retryable(err) -> bool:
    return err.status_code in (408, 409, 429) or err.status_code >= 500 or _error_type(err) in RETRYABLE_ERROR_TYPES
