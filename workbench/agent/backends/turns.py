"""What a backend takes and gives: the turn request, the assistant turn, and the errors a backend raises."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from workbench.campaign.events import Usage


class BackendError(RuntimeError):
    """The backend cannot produce a turn (API error after retries, bad recording); one readable line."""


class BackendExhausted(BackendError):
    """A scripted or recorded backend has no more turns."""


@dataclass
class TurnRequest:
    system: str
    tools: list                         # tool specs (name, description, input_schema)
    messages: list                      # the conversation, Messages-API form; do not mutate
    turn: int
    questions: list = field(default_factory=list)   # InterventionFired.to_dict() of the questions so far (layers)


@dataclass
class AssistantTurn:
    content: list
    stop_reason: str                    # tool_use | end_turn | max_tokens | ...
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    message_id: str = ""
    cost_usd: Optional[float] = 0.0

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list:
        return [b for b in self.content if b.get("type") == "tool_use"]
