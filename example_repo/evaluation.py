"""Evaluate a registered checkpoint: a small arithmetic set through an OpenAI-style
chat-completions call on the registered model. Plain functions, no Dagster, easy to test."""

import random
import re
from dataclasses import dataclass

import httpx

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
    base_url: str, api_key: str, model: str, *, seed: str = "rl-eval", timeout: float = 30.0
) -> EvalResult:
    """Ask each question once (temperature 0) and count exact numeric answers."""
    correct = 0
    questions = arithmetic_set(seed)
    with httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=timeout,
    ) as http:
        for question, answer in questions:
            response = http.post(
                "/v1/chat/completions",
                json={"model": model, "temperature": 0, "max_tokens": 16,
                      "messages": [{"role": "user", "content": question}]},
            )
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
            found = re.search(r"-?\d+", text or "")
            correct += bool(found and int(found.group()) == answer)
    return EvalResult(correct / len(questions), correct, len(questions), model)
