"""The chat-completion wire models: what ``POST /v1/chat/completions`` takes and answers.

Apart from :mod:`.inference` (the method, which needs the HTTP client) so that an evaluation
definition can name these types without importing httpx. No Dagster here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChatChoice",
    "ChatCompletion",
    "ChatMessage",
    "ChatUsage",
    "MessageLike",
    "message_wire",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class ChatMessage(_Wire):
    """One message of a conversation (``role`` is ``system``, ``user``, ``assistant``, ...)."""

    role: str
    content: str | None = None


class ChatChoice(_Wire):
    index: int = 0
    message: ChatMessage = Field(default_factory=lambda: ChatMessage(role="assistant"))
    finish_reason: str | None = None


class ChatUsage(_Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletion(_Wire):
    """The response, plus ``latency_s``: seconds the call took on this side, retries and
    their sleeps included (what a caller waiting for the answer experiences)."""

    id: str | None = None
    model: str | None = None
    choices: list[ChatChoice] = Field(default_factory=list)
    usage: ChatUsage | None = None
    latency_s: float = Field(default=0.0, exclude=True)

    @property
    def text(self) -> str:
        """The first choice's content (``""`` when the model sent none)."""
        return (self.choices[0].message.content or "") if self.choices else ""

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens if self.usage else 0

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens if self.usage else 0


MessageLike = ChatMessage | dict[str, Any]


def message_wire(m: MessageLike) -> dict[str, Any]:
    if isinstance(m, ChatMessage):
        return m.model_dump(mode="json", exclude_none=True)
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        raise ValueError(f"a chat message is a ChatMessage or a dict with a 'role', not {m!r}")
    return m
