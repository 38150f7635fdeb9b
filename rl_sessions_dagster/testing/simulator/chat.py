"""``POST /v1/chat/completions`` for demos: registered checkpoints answer arithmetic questions
(``What is 17 + 25?``), right more often as their step grows, deterministically per (world seed,
model, question), so an evaluation is reproducible and scores rise with training.
"""

from __future__ import annotations

import operator
import re
from hashlib import blake2b
from typing import Any

from .routing import Request, Response, json_response
from .wire import SimulatorError, bad_request
from .world import SimulatedWorld

_TIMES = "\u00d7"  # the multiplication sign
_OPS = {"+": operator.add, "-": operator.sub} | dict.fromkeys(("*", "x", _TIMES), operator.mul)
_QUESTION = re.compile(r"(-?\d+)\s*([-+*/x" + _TIMES + r"])\s*(-?\d+)")


def p_correct(step: int) -> float:
    step = max(0, step)
    return min(0.95, 0.35 + 0.6 * step / (step + 40))


def _unit(*parts: object) -> float:
    digest = blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def solve(question: str) -> int | float | None:
    m = _QUESTION.search(question)
    if m is None:
        return None
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    if op in _OPS:
        return _OPS[op](a, b)
    if b == 0:
        return None
    return a // b if a % b == 0 else round(a / b, 2)


def answer(seed: int, model: str, step: int, question: str) -> str:
    """Right with probability :func:`p_correct`, else off by a small non-zero amount."""
    truth = solve(question)
    if truth is None:
        return f"I am a simulated model ({model}, step {step}); I only answer arithmetic."
    if _unit(seed, model, question, "correct") < p_correct(step):
        value = truth
    else:
        delta = 1 + int(_unit(seed, model, question, "delta") * 9)
        value = truth + (delta if _unit(seed, model, question, "sign") < 0.5 else -delta)
    return f"The answer is {value}."


def _words(text: Any) -> int:
    return len(str(text).split())


def chat_completion(world: SimulatedWorld, req: Request) -> Response:
    body = req.json(required=True)
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty array", param="messages")
    if body.get("stream"):
        raise bad_request("the simulator does not stream", param="stream")
    found = world.chat_model(model)
    if found is None:
        message = f"model {model!r} is not a registered checkpoint"
        raise SimulatorError(404, message, param="model", code="model_not_found")
    ckpt_id, step = found
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    content = answer(world.seed, model, step, str(users[-1].get("content") or "") if users else "")
    prompt = sum(_words(m.get("content", "")) for m in messages if isinstance(m, dict))
    completion = _words(content)
    cid = blake2b(f"{req.request_id}:{ckpt_id}".encode(), digest_size=12).hexdigest()
    return json_response({
        "id": f"chatcmpl-{cid}",
        "object": "chat.completion",
        "created": int(world.now().timestamp()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    })  # fmt: skip
