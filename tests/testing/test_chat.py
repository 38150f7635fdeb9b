"""Chat completions for demos: registered checkpoints answer arithmetic better with training."""

from __future__ import annotations

import httpx
import pytest

from rl_sessions_dagster.testing import SimulatedWorld
from rl_sessions_dagster.testing.simulator.chat import answer, p_correct, solve

QUESTIONS = [
    f"What is {a} + {b}? Answer with the number only." for a in range(10, 30) for b in range(40, 50)
]


def ask(client: httpx.Client, model: str, question: str) -> httpx.Response:
    return client.post(
        "/v1/chat/completions",
        json={
            "model": model,
            "temperature": 0,
            "messages": [{"role": "user", "content": question}],
        },
    )


def reg_name(world: SimulatedWorld, sid: str, index: int = -1) -> str:
    reg = world.session(sid)["inference_checkpoints"][index]["registration"]
    return reg.get("model_name") or (reg.get("adapter") or reg["model"])["id"]


def test_openai_shape(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.add_inference_checkpoint(sid)
    model = reg_name(world, sid)
    body = ask(client, model, "What is 17 + 25?").json()
    assert body["object"] == "chat.completion" and body["model"] == model
    assert body["id"].startswith("chatcmpl-") and isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert (
        choice["message"]["role"] == "assistant" and "The answer is" in choice["message"]["content"]
    )
    assert (
        body["usage"]["total_tokens"]
        == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


@pytest.mark.parametrize(
    ("shape", "lora"),
    [("current", True), ("current", False), ("object_ids", True), ("legacy", False)],
)
def test_every_exposed_name_is_servable(
    world: SimulatedWorld, client: httpx.Client, shape: str, lora: bool
) -> None:
    sid = world.create_session(registration_shape=shape, lora=lora)
    world.add_inference_checkpoint(sid)
    reg = world.session(sid)["inference_checkpoints"][0]["registration"]
    names = [reg[k] for k in ("model_name", "model_object_id", "adapter_object_id") if k in reg]
    names += [reg[k]["id"] for k in ("model", "adapter") if k in reg]
    assert names
    for name in names:
        assert ask(client, name, "What is 1 + 1?").status_code == 200


def test_unknown_models_and_bad_requests(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.add_inference_checkpoint(sid, registered=False)
    for model in ("Qwen/Qwen3-8B", "ml_nope", "user/whatever"):
        r = ask(client, model, "What is 1 + 1?")
        assert r.status_code == 404 and r.json()["error"]["param"] == "model"
    assert client.post("/v1/chat/completions", json={"model": "x"}).status_code == 400
    assert client.post("/v1/chat/completions", json={"messages": []}).status_code == 400


def test_registration_makes_a_model_servable(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    ask(client, "ml_warm_the_index", "hi")
    cid = world.add_inference_checkpoint(sid, registered=False)
    world.register_checkpoint(cid)
    assert ask(client, reg_name(world, sid), "What is 2 + 2?").status_code == 200


def test_scores_are_deterministic_and_rise_with_step(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    sid = world.create_session(registration_shape="legacy")
    world.add_inference_checkpoint(sid)
    world.advance_steps(sid, 400)
    world.add_inference_checkpoint(sid)
    early, late = reg_name(world, sid, 0), reg_name(world, sid, 1)

    def score(model: str) -> float:
        right = 0
        for q in QUESTIONS[:60]:
            text = ask(client, model, q).json()["choices"][0]["message"]["content"]
            right += text == f"The answer is {solve(q)}."
        return right / 60

    first = score(early)
    assert first == score(early)
    assert 0.15 < first < 0.6 and score(late) > 0.75


def test_answer_function() -> None:
    assert p_correct(0) == pytest.approx(0.35) and 0.94 < p_correct(10**6) <= 0.95
    assert p_correct(10) < p_correct(100) < p_correct(1000)
    assert (
        solve("What is 6 x 7?") == 42 and solve("what is 9 - 12") == -3 and solve("hello") is None
    )
    assert solve("What is 7 / 2?") == 3.5 and solve("What is 1 / 0?") is None
    outcomes = {answer(0, "m", 0, q) == f"The answer is {solve(q)}." for q in QUESTIONS}
    assert outcomes == {True, False}
    assert answer(1, "m", 5, "What is 3 + 4?") == answer(1, "m", 5, "What is 3 + 4?")
    assert "only answer arithmetic" in answer(0, "m", 0, "tell me a joke")
