"""Agent backends behind one small interface.

A backend turns the conversation so far into the next assistant message:

    backend.next_turn(request: TurnRequest, on_text: Callable[[int, str], None]) -> AssistantTurn

`on_text(block_index, text)` is called as assistant text streams in. Content blocks are Messages-API dicts
(`{"type": "text", "text": ...}`, `{"type": "tool_use", "id", "name", "input"}`). `snapshot()`/`restore()` carry
a backend's own state across a resume. Backends: claude (anthropic SDK), offline (scripted baseline, no LLM),
replay (a recorded session), fake (tests); turns.py holds the records they share.
"""
from __future__ import annotations

from workbench.agent.backends.turns import BackendError


def make_backend(spec: str, *, model: str = "", base_url: str | None = None, http_client=None, seed: int = 0):
    """`claude`, `offline`, `replay:PATH[#SESSION]` or `fake` (an empty script) to a backend instance."""
    name, _, arg = spec.partition(":")
    if name == "claude":
        from workbench.agent.backends.claude import ClaudeBackend
        return ClaudeBackend(model=model or None, base_url=base_url, http_client=http_client)
    if name == "offline":
        from workbench.agent.backends.offline import ScriptedAgent
        return ScriptedAgent(seed=seed)
    if name == "replay":
        from workbench.agent.backends.replay import ReplayBackend
        if not arg:
            raise BackendError("replay needs a path: --agent replay:PATH (a campaign folder or a trace root)")
        return ReplayBackend.from_spec(arg)
    if name == "fake":
        from workbench.agent.backends.fake import FakeBackend
        return FakeBackend([])
    raise BackendError(f"unknown agent {spec!r}; use claude, offline or replay:PATH")
