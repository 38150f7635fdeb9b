"""The retry rules end to end against the simulator: attempts counted in its request log,
sleeps recorded, not slept."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Callable

import pytest

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient, TogetherRLError
from rl_sessions_dagster.api.errors import (
    DeadlineExceeded,
    DecodeError,
    RateLimitError,
    ServerError,
    TransportError,
)
from rl_sessions_dagster.api.retries import RetryEvent
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY, NEVER, RetryRecorder, status_error

SESSION = "/v1/rl/training-sessions/{id}"
SESSIONS = "/v1/rl/training-sessions"


def test_get_is_retried_through_5xx_until_it_succeeds(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sid = sim.world.create_session()
    sim.faults.add(f"GET {SESSION}", status=503, times=2)
    assert client.get_session(sid).id == sid
    assert sim.requests.count("GET", SESSION) == 3
    assert sim.requests.count("GET", SESSION, faulted=True) == 2
    assert [e.delay_source for e in retries.events] == ["backoff", "backoff"]
    assert client.stats.retries == 2


def test_a_first_attempt_that_succeeds_sends_one_request_and_reports_no_retry(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sid = sim.world.create_session()
    assert client.get_session(sid).id == sid
    assert sim.requests.count("GET", SESSION) == 1
    assert retries.events == [] and retries.sleeps == []
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_a_503_then_a_200_is_retried_once_with_one_event(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sid = sim.world.create_session()
    sim.faults.add(f"GET {SESSION}", status=503, times=1)
    assert client.get_session(sid).id == sid
    assert sim.requests.count("GET", SESSION) == 2
    assert sim.requests.count("GET", SESSION, faulted=True) == 1
    assert len(retries.events) == 1 and len(retries.sleeps) == 1
    event = retries.events[0]
    assert (event.attempt, event.status_code, event.max_attempts) == (1, 503, 4)
    assert event.endpoint == f"GET /v1/rl/training-sessions/{sid}"
    assert event.delay == retries.sleeps[0]
    assert client.stats.retries == 1


def test_a_first_retryable_failure_is_attempt_one_not_an_extra_send() -> None:
    """A retryable failure of the first attempt counts as attempt 1 (one call, one event, the
    same error object), never as a send outside the retry budget."""
    sent: list[float | None] = []
    events: list[RetryEvent] = []
    first = status_error(ServerError, 503)

    def attempt(budget: float | None) -> str:
        sent.append(budget)
        if len(sent) == 1:
            raise first
        return "ok"

    policy = RetryPolicy(sleep=lambda s: None, on_retry=events.append, jitter=0.0)
    assert policy.call(attempt, endpoint="GET /x", idempotent=True) == "ok"
    assert len(sent) == 2
    assert [(e.attempt, e.error) for e in events] == [(1, first)]
    assert first.attempts == 1


def test_attempts_are_capped_at_max_attempts(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sim.faults.add(f"GET {SESSIONS}", status=502)
    with pytest.raises(ServerError) as info:
        client.list_sessions_page()
    assert sim.requests.count("GET", SESSIONS) == 4 and info.value.attempts == 4
    assert len(retries.sleeps) == 3


@pytest.mark.parametrize("fault", ["drop", "reset_after_headers"])
def test_get_is_retried_after_a_dropped_connection(
    sim: RLSimulator, client: RLSessionsClient, fault: str
) -> None:
    sid = sim.world.create_session()
    sim.faults.add(f"GET {SESSION}", times=1, **{fault: True})
    assert client.get_session(sid).id == sid
    assert sim.requests.count("GET", SESSION) == 2


def test_retry_after_seconds_is_the_delay(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sim.faults.add("GET /v1/rl/supported-models", status=429, retry_after=0.05, times=2)
    assert client.list_supported_models()
    assert sim.requests.count("GET", "/v1/rl/supported-models") == 3
    assert retries.sleeps == [0.05, 0.05]
    assert [e.delay_source for e in retries.events] == ["retry-after", "retry-after"]
    first = retries.events[0].error
    assert isinstance(first, RateLimitError) and first.retry_after == 0.05


def test_retry_after_ms_and_http_date(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sim.faults.add("GET /v1/rl/supported-models", status=429, retry_after_ms=30, times=1)
    date = email.utils.formatdate(time.time() + 2, usegmt=True)
    sim.faults.add("GET /v1/rl/checkpoints", status=503, headers={"Retry-After": date}, times=1)
    client.list_supported_models()
    client.list_checkpoints_page()
    assert retries.sleeps[0] == 0.03
    assert 0 < retries.sleeps[1] <= 2.0  # a 503 may carry Retry-After too
    assert [e.delay_source for e in retries.events] == ["retry-after", "retry-after"]


def test_a_long_retry_after_is_capped(sim: RLSimulator, retries: RetryRecorder) -> None:
    sim.faults.add("GET /v1/rl/supported-models", status=429, retry_after=120, times=1)
    policy = retries.policy(retry_after_cap=0.5)
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=policy) as client:
        client.list_supported_models()
    assert retries.sleeps == [0.5]


@pytest.mark.parametrize(("cls", "status"), NEVER)
def test_client_errors_are_sent_exactly_once(
    sim: RLSimulator, client: RLSessionsClient, status: int, cls: type[TogetherRLError]
) -> None:
    sim.faults.add("GET /v1/rl/checkpoints", status=status)
    with pytest.raises(cls) as info:
        client.list_checkpoints_page()
    assert type(info.value) is cls and info.value.status_code == status
    assert len(sim.requests) == 1 and client.stats.requests == 1


NON_IDEMPOTENT: list[tuple[str, Callable[[RLSessionsClient, RLSimulator], object]]] = [
    (
        "POST /v1/rl/training-sessions",
        lambda c, s: c.create_session(s.world.create_model_resource()),
    ),
    ("POST /v1/rl/model-resources", lambda c, s: c.create_model_resource("Qwen/Qwen3-0.6B")),
    (f"PATCH {SESSION}", lambda c, s: c.update_session(s.world.create_session(), display_name="x")),
    (f"POST {SESSION}/stop", lambda c, s: c.stop_session(s.world.create_session())),
    (
        "POST /v1/rl/model-resources/{id}/extend-expiry",
        lambda c, s: c.extend_model_resource_expiry(s.world.create_model_resource(), 60),
    ),
    (
        "POST /v1/rl/model-resources/{id}/stop",
        lambda c, s: c.stop_model_resource(s.world.create_model_resource()),
    ),
]


@pytest.mark.parametrize(("endpoint", "call"), NON_IDEMPOTENT, ids=[e for e, _ in NON_IDEMPOTENT])
@pytest.mark.parametrize("fault", ["status:503", "drop", "slow"])
def test_non_idempotent_calls_are_not_retried_once_they_may_have_arrived(
    sim: RLSimulator,
    retries: RetryRecorder,
    endpoint: str,
    call: Callable[[RLSessionsClient, RLSimulator], object],
    fault: str,
) -> None:
    # process=True: the server acts, then the response is lost; a retry would act twice.
    if fault == "status:503":
        sim.faults.add(endpoint, status=503, process=True)
    elif fault == "drop":
        sim.faults.add(endpoint, drop=True, process=True)
    else:
        sim.faults.add(endpoint, delay_s=2.0)
    policy = retries.policy()
    with (
        RLSessionsClient(KEY, base_url=sim.base_url, retry=policy, timeout=0.3) as client,
        pytest.raises((ServerError, TransportError)) as info,
    ):
        call(client, sim)
    method, template = endpoint.split(" ")
    assert sim.requests.count(method, template) == 1 or fault == "slow"
    assert client.stats.requests == 1 and retries.sleeps == []
    if isinstance(info.value, TransportError):
        assert info.value.may_have_reached_server


def test_a_lost_create_response_creates_exactly_one_session(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    resource = sim.world.create_model_resource()
    sim.faults.add(f"POST {SESSIONS}", drop=True, process=True, times=1)
    with pytest.raises(TransportError):
        client.create_session(resource)
    assert len(sim.world.session_ids()) == 1


def test_session_cap_429_on_create_is_not_retried(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    resource = sim.world.create_model_resource()
    with pytest.raises(RateLimitError) as info:
        for _ in range(20):
            client.create_session(resource)
    assert "capacity" in str(info.value)
    assert sim.requests.count("POST", SESSIONS, status=429) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_create_is_retried_when_the_connection_is_refused(retries: RetryRecorder) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}"
    with (
        RLSessionsClient(KEY, base_url=base_url, retry=retries.policy()) as client,
        pytest.raises(TransportError) as info,
    ):
        client.create_session("mr-1")
    assert not info.value.may_have_reached_server
    assert client.stats.requests == 4 and len(retries.sleeps) == 3
    assert str(info.value).startswith("POST /v1/rl/training-sessions: ConnectError")


@pytest.mark.parametrize("fault", ["status:503", "drop", "malformed"])
def test_operation_submit_retries_reuse_one_idempotency_key(
    sim: RLSimulator, client: RLSessionsClient, fault: str
) -> None:
    sid = sim.world.create_session()
    endpoint = f"POST {SESSION}/operations/optim-step"
    if fault == "status:503":
        sim.faults.add(endpoint, status=503, process=True, times=2)
    elif fault == "drop":
        sim.faults.add(endpoint, drop=True, process=True, times=2)
    else:
        sim.faults.add(endpoint, malformed=True, times=2)
    op = client.optim_step(sid)
    records = sim.requests.records("POST", f"{SESSION}/operations/optim-step")
    assert len(records) == 3
    keys = {r.idempotency_key for r in records}
    assert len(keys) == 1 and None not in keys
    assert sim.world.counts()["operations"] == 1  # the server ran it once
    assert sim.world.operation(op.id)["id"] == op.id


def test_malformed_json_is_a_decode_error_naming_the_endpoint(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    sim.faults.add(f"GET {SESSION}", malformed=True, times=1)
    assert client.get_session(sid).id == sid  # retried once, then fine
    assert sim.requests.count("GET", SESSION) == 2
    sim.faults.add(f"GET {SESSION}", malformed=True)
    with pytest.raises(DecodeError) as info:
        client.get_session(sid)
    assert str(info.value).startswith(f"GET /v1/rl/training-sessions/{sid} → 200: ")
    assert "TrainingSession" in str(info.value) and info.value.attempts == 4


def test_malformed_json_after_a_create_is_not_retried(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    resource = sim.world.create_model_resource()
    sim.faults.add(f"POST {SESSIONS}", malformed=True)
    with pytest.raises(DecodeError, match="POST /v1/rl/training-sessions"):
        client.create_session(resource)
    assert sim.requests.count("POST", SESSIONS) == 1 and len(sim.world.session_ids()) == 1


# -- deadlines over HTTP ----------------------------------------------------------------------------


def test_a_retry_after_past_the_deadline_is_not_slept(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sim.faults.add("GET /v1/rl/supported-models", status=429, retry_after=60)
    # 20 s: far above a loaded machine's request time (the 429 must arrive inside it), still
    # under the 60 s Retry-After, which is refused at once rather than slept.
    with pytest.raises(DeadlineExceeded) as info:
        client.list_supported_models(deadline=time.monotonic() + 20.0)
    assert retries.sleeps == [] and sim.requests.count() == 1
    last = info.value.last_error
    assert isinstance(last, RateLimitError) and last.retry_after == 60
    assert info.value.retry_after == 60  # the caller can reschedule on it


def test_a_slow_server_cannot_overrun_the_call_deadline(
    sim: RLSimulator, retries: RetryRecorder
) -> None:
    sim.faults.add("GET /v1/rl/supported-models", delay_s=30.0)
    policy = retries.policy(deadline=0.4)
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=policy, timeout=60.0) as client:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as info:
            client.list_supported_models()
        elapsed = time.monotonic() - started
    assert isinstance(info.value.last_error, TransportError)
    assert "ReadTimeout" in str(info.value.last_error)
    # The attempt's timeout was the remaining 0.4 s budget, not the client's 60 s: the call
    # returned long before the server's 30 s delay. The bound is that far from both so a
    # loaded machine cannot fail it.
    assert elapsed < 10.0
