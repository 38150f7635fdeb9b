"""Chat completions on a registered checkpoint (OpenAI-style), what an evaluation calls; retried
like a GET: it changes nothing on the server, and a repeat costs only tokens."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ._http import BaseClient, compact
from .models import APIModel


class ChatMessage(APIModel):
    """One message of a conversation (``role`` is ``system``, ``user``, ``assistant``, ...)."""

    role: str
    content: str | None = None


class ChatChoice(APIModel):
    index: int = 0
    message: ChatMessage = Field(default_factory=lambda: ChatMessage(role="assistant"))
    finish_reason: str | None = None


class ChatUsage(APIModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletion(APIModel):
    """The response, plus ``latency_s``: seconds the call took here, retries included."""

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
_CHAT = "/v1/chat/completions"


class InferenceAPI(BaseClient):
    """The inference method of :class:`~rl_sessions_dagster.api.client.RLSessionsClient`."""

    def chat_completion(
        self,
        model: str,
        messages: Sequence[MessageLike],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        n: int | None = None,
        stop: str | list[str] | None = None,
        seed: int | None = None,
        deadline: float | None = None,
    ) -> ChatCompletion:
        """Ask ``model`` (a ``DeploymentTarget.inference_model``; unknown: NotFoundError)."""
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        wire = []
        for m in messages:
            if isinstance(m, ChatMessage):
                m = m.model_dump(mode="json", exclude_none=True)
            elif not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ValueError(
                    f"a chat message is a ChatMessage or a dict with a 'role', not {m!r}"
                )
            wire.append(m)
        if not wire:
            raise ValueError("messages must not be empty")
        body = compact(
            model=model,
            messages=wire,
            temperature=temperature,
            max_tokens=max_tokens,
            top_p=top_p,
            n=n,
            stop=stop,
            seed=seed,
        )
        started = time.perf_counter()
        result = self._request(
            "POST", _CHAT, ChatCompletion, json=body, idempotent=True, deadline=deadline
        )
        result.latency_s = time.perf_counter() - started
        return result
