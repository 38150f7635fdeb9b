"""Evaluate a registered checkpoint: a small arithmetic set through an OpenAI-style
chat-completions call on the registered model. Plain functions, no Dagster, easy to test.

Each chat call is retried on transient failures (429, 5xx, dropped connections) with the
library's :class:`~rl_sessions_dagster.api.RetryPolicy`: with 20 calls per evaluation, a few
percent of failing calls would otherwise fail most evaluations. A chat call at temperature 0
is safe to repeat (it changes nothing; a repeat costs only tokens).
"""

import random
import re
from dataclasses import dataclass
from typing import Any

import httpx

from rl_sessions_dagster.api import DecodeError, RetryPolicy
from rl_sessions_dagster.api.errors import error_from_response, transport_error

QUESTIONS = 20


@dataclass(frozen=True)
class EvalResult:
    score: float
    correct: int
    total: int
    model: str


def arithmetic_set(seed: str, n: int = QUESTIONS) -> list[tuple[str, int]]:
    """The same questions for every checkpoint of a run, so scores are comparable."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        out.append((f"What is {a} + {b}? Answer with the number only.", a + b))
    return out


def _chat(http: httpx.Client, api_key: str, body: dict[str, Any]) -> str:
    """One chat-completions attempt; failures become the library's typed, key-free errors."""
    try:
        response = http.post("/v1/chat/completions", json=body)
    except httpx.RequestError as exc:
        error = transport_error(exc, method="POST", url=exc.request.url, secrets=[api_key])
        raise error from None  # the httpx exception's request carries the auth header
    if response.status_code >= 400:
        raise error_from_response(response, secrets=[api_key])
    try:
        return response.json()["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError):
        raise DecodeError("POST /v1/chat/completions: unexpected response body") from None


def evaluate_model(
    base_url: str,
    api_key: str,
    model: str,
    *,
    seed: str = "rl-eval",
    timeout: float = 30.0,
    retry: RetryPolicy | None = None,
) -> EvalResult:
    """Ask each question (temperature 0) and count exact numeric answers. Each call is retried
    per ``retry`` (default: 5 attempts, backoff from 0.5 s, honouring Retry-After)."""
    policy = retry or RetryPolicy(max_attempts=5)
    correct = 0
    questions = arithmetic_set(seed)
    with httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=timeout,
    ) as http:
        for question, answer in questions:
            body = {"model": model, "temperature": 0, "max_tokens": 16,
                    "messages": [{"role": "user", "content": question}]}  # fmt: skip
            text = policy.call(
                lambda _budget, body=body: _chat(http, api_key, body),
                endpoint="POST /v1/chat/completions",
                idempotent=True,
            )
            found = re.search(r"-?\d+", text)
            correct += bool(found and int(found.group()) == answer)
    return EvalResult(correct / len(questions), correct, len(questions), model)
