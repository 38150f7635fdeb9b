"""Evaluate a registered checkpoint: a small arithmetic set through the client's public
chat-completions call on the registered model. Plain functions, no Dagster, easy to test.

Each chat call is retried on transient failures (429, 5xx, dropped connections) with the
library's :class:`~rl_sessions_dagster.api.RetryPolicy`: with 20 calls per evaluation, a few
percent of failing calls would otherwise fail most evaluations. A chat call is safe to repeat
(it changes nothing; a repeat costs only tokens), so the client retries it like a GET.

This is the hand-written, one-question-at-a-time version; the library's built-in evaluation
(``build_evaluation_asset``, or ``evaluation:`` in the YAML Component) adds graders, bounded
concurrency, a results table and a score check.
"""

import random
import re
from dataclasses import dataclass

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient

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
    with RLSessionsClient(api_key, base_url=base_url, timeout=timeout, retry=policy) as client:
        for question, answer in questions:
            reply = client.chat_completion(
                model, [{"role": "user", "content": question}], temperature=0, max_tokens=16
            )
            found = re.search(r"-?\d+", reply.text)
            correct += bool(found and int(found.group()) == answer)
    return EvalResult(correct / len(questions), correct, len(questions), model)
