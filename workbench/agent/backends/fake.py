"""A fake backend for tests: plays a script of turns, and remembers every request it was given.

    FakeBackend([
        [say("Let me measure first."), call("run_harness")],
        lambda request: [say("I am done.")],          # a callable sees the TurnRequest
    ])
"""
from __future__ import annotations

import copy
import itertools
from typing import Callable, Union

from workbench.agent.backends.turns import AssistantTurn, BackendExhausted, TurnRequest
from workbench.campaign.events import Usage

Turn = Union[list, AssistantTurn, Callable[[TurnRequest], Union[list, AssistantTurn]]]
_ids = itertools.count(1)


def say(text: str) -> dict:
    return {"type": "text", "text": text}


def call(name: str, **input) -> dict:
    return {"type": "tool_use", "id": f"toolu_fake_{next(_ids):04d}", "name": name, "input": input}


class FakeBackend:
    name = "fake"
    model = "fake-model"

    def __init__(self, script: list, usage: Usage | None = None, price_per_token: float = 0.0):
        self.script = list(script)
        self.position = 0
        self.usage = usage or Usage(input_tokens=100, output_tokens=20)
        self.price_per_token = price_per_token
        self.requests: list[TurnRequest] = []   # deep copies, as the backend saw them

    def next_turn(self, request: TurnRequest, on_text) -> AssistantTurn:
        self.requests.append(copy.deepcopy(request))
        if self.position >= len(self.script):
            raise BackendExhausted(f"the fake script has only {len(self.script)} turns")
        item = self.script[self.position]
        self.position += 1
        if callable(item):
            item = item(request)
        if isinstance(item, AssistantTurn):
            return item
        content = copy.deepcopy(item)
        for index, block in enumerate(content):
            if block["type"] == "text":
                for piece in _pieces(block["text"]):
                    on_text(index, piece)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        usage = copy.copy(self.usage)
        return AssistantTurn(content, stop, usage, self.model, f"msg_fake_{request.turn:04d}",
                             usage.total * self.price_per_token)

    def snapshot(self) -> dict:
        return {"position": self.position}

    def restore(self, snap: dict) -> None:
        self.position = snap.get("position", 0)


def _pieces(text: str, size: int = 16):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
