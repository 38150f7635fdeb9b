"""``RLSessionsClient.chat_completion`` against the simulator: the typed answer, the client's
retry policy (Retry-After honoured), and typed key-free errors."""

from __future__ import annotations

import pytest

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.api.checkpoints import deployment_target
from rl_sessions_dagster.api.errors import NotFoundError, RateLimitError, ServerError
from rl_sessions_dagster.api.inference import ChatCompletion, ChatMessage
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY, RetryRecorder


def registered_model(sim: RLSimulator, client: RLSessionsClient, step: int = 10) -> str:
    sid = sim.world.create_session()
    sim.world.advance_steps(sid, step)
    cid = sim.world.add_inference_checkpoint(sid)
    model = deployment_target(client.get_checkpoint(cid)).inference_model
    assert model
    return model


def test_typed_answer_with_usage_and_latency(sim: RLSimulator, client: RLSessionsClient) -> None:
    model = registered_model(sim, client)
    out = client.chat_completion(
        model,
        [ChatMessage(role="system", content="Be brief."), {"role": "user", "content": "2 + 3?"}],
        temperature=0,
        max_tokens=16,
    )
    assert isinstance(out, ChatCompletion)
    assert out.model == model and out.text.startswith("The answer is")
    assert out.usage is not None and out.prompt_tokens > 0 and out.completion_tokens > 0
    assert out.latency_s > 0
    (record,) = [r for r in sim.requests.records() if r.path == "/v1/chat/completions"]
    assert record.status == 200


def test_retries_429_honouring_retry_after(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    model = registered_model(sim, client)
    sim.faults.add("POST /v1/chat/completions", status=429, retry_after=2, times=1)
    sim.faults.add("POST /v1/chat/completions", status=503, times=1)
    out = client.chat_completion(model, [{"role": "user", "content": "1 + 1"}])
    assert out.text
    assert [e.delay_source for e in retries.events] == ["retry-after", "backoff"]
    assert retries.sleeps[0] == 2.0
    assert isinstance(retries.events[0].error, RateLimitError)
    assert isinstance(retries.events[1].error, ServerError)


def test_unknown_model_is_a_key_free_not_found(sim: RLSimulator, client: RLSessionsClient) -> None:
    with pytest.raises(NotFoundError) as info:
        client.chat_completion("ml_nope", [{"role": "user", "content": "1 + 1"}])
    assert info.value.attempts == 1
    text = f"{info.value} {info.value!r} {info.value.__dict__}"
    assert KEY not in text and "ml_nope" in str(info.value)


def test_keeps_failing_raises_after_the_policy_attempts(
    sim: RLSimulator, retries: RetryRecorder
) -> None:
    with RLSessionsClient(
        KEY, base_url=sim.base_url, timeout=5.0, retry=retries.policy(max_attempts=3)
    ) as client:
        model = registered_model(sim, client)
        sim.faults.add("POST /v1/chat/completions", status=503)
        with pytest.raises(ServerError) as info:
            client.chat_completion(model, [{"role": "user", "content": "1 + 1"}])
    assert info.value.attempts == 3 and KEY not in repr(info.value)


@pytest.mark.parametrize("bad", [[], [{"content": "no role"}], ["text"]])
def test_bad_messages_fail_before_sending(
    sim: RLSimulator, client: RLSessionsClient, bad: list
) -> None:
    with pytest.raises(ValueError):
        client.chat_completion("m", bad)
    assert not [r for r in sim.requests.records() if r.path == "/v1/chat/completions"]
