"""The retry policy: what is retried, how long it waits and why, and the per-call deadline.

These drive ``RetryPolicy.call`` directly with a fake clock and sleep (no HTTP, no waiting,
fully deterministic); test_retries_http.py checks the same rules end to end against the
simulator, counting attempts in its request log.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable

import httpx
import pytest

from rl_sessions_dagster.api import RetryPolicy, TogetherRLError
from rl_sessions_dagster.api.errors import (
    APIStatusError,
    DeadlineExceeded,
    DecodeError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TransportError,
)
from rl_sessions_dagster.api.retries import RetryEvent, parse_retry_after, should_retry

from .conftest import NEVER, status_error

# -- parse_retry_after ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "100", "retry-after": "9"}, 0.1),  # the precise one wins
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "inf"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(httpx.Headers(headers)) == expected


def test_parse_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    value = parse_retry_after(httpx.Headers({"retry-after": when}))
    assert value is not None and 15 < value <= 20


# -- classification -------------------------------------------------------------------------------


TRANSIENT = [(APIStatusError, 408), (RateLimitError, 429), (ServerError, 500), (ServerError, 503)]


@pytest.mark.parametrize(("cls", "status"), NEVER)
def test_client_errors_are_never_retried(cls: type[TogetherRLError], status: int) -> None:
    assert not should_retry(status_error(cls, status), idempotent=True)


@pytest.mark.parametrize(("cls", "status"), TRANSIENT)
def test_transient_statuses_are_retried_only_when_idempotent(
    cls: type[TogetherRLError], status: int
) -> None:
    assert should_retry(status_error(cls, status), idempotent=True)
    assert not should_retry(status_error(cls, status), idempotent=False)


def test_transport_errors_retry_non_idempotent_only_when_never_sent() -> None:
    refused = TransportError("connect", may_have_reached_server=False)
    dropped = TransportError("read", may_have_reached_server=True)
    assert should_retry(refused, idempotent=False) and should_retry(refused, idempotent=True)
    assert not should_retry(dropped, idempotent=False) and should_retry(dropped, idempotent=True)
    decode = DecodeError("bad json", retryable=True)
    assert should_retry(decode, idempotent=True) and not should_retry(decode, idempotent=False)
    assert not should_retry(ValueError("a bug, not an API failure"), idempotent=True)


# -- RetryPolicy.call with a fake clock -------------------------------------------------------------


class FakeTime:
    """A clock that only moves when the policy sleeps (or a test says so)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def policy(fake: FakeTime, events: list[RetryEvent] | None = None, **kw: object) -> RetryPolicy:
    return RetryPolicy(
        sleep=fake.sleep,
        clock=fake.clock,
        on_retry=None if events is None else events.append,
        **kw,  # type: ignore[arg-type]
    )


def failing(*errors: TogetherRLError, result: str = "ok") -> Callable[[float | None], str]:
    """An attempt function raising the given errors in turn, then returning ``result``."""
    queue = list(errors)
    budgets: list[float | None] = []

    def attempt(budget: float | None) -> str:
        budgets.append(budget)
        if queue:
            raise queue.pop(0)
        return result

    attempt.budgets = budgets  # type: ignore[attr-defined]
    return attempt


def test_backoff_grows_and_is_bounded() -> None:
    fake = FakeTime()
    errors = [status_error(ServerError, 503) for _ in range(5)]
    p = policy(fake, max_attempts=6, backoff_initial=0.5, backoff_max=3.0, jitter=0.25)
    assert p.call(failing(*errors), endpoint="GET /x", idempotent=True) == "ok"
    assert len(fake.sleeps) == 5
    for n, slept in enumerate(fake.sleeps):
        base = min(0.5 * 2**n, 3.0)
        assert base <= slept <= base + 0.25


def test_retry_after_is_the_delay_source_and_is_capped() -> None:
    fake, events = FakeTime(), []  # type: ignore[var-annotated]
    e1 = status_error(RateLimitError, 429, retry_after=0.2)
    e2 = status_error(RateLimitError, 429, retry_after=500.0)
    e3 = status_error(ServerError, 503)
    p = policy(fake, events, retry_after_cap=2.0, jitter=0.0, backoff_initial=0.5)
    assert p.call(failing(e1, e2, e3), endpoint="GET /x", idempotent=True) == "ok"
    assert fake.sleeps == [0.2, 2.0, 2.0]  # server-asked, capped, then plain backoff 0.5*2**2
    assert [e.delay_source for e in events] == ["retry-after", "retry-after", "backoff"]
    assert [e.attempt for e in events] == [1, 2, 3]
    assert events[0].error is e1 and events[0].endpoint == "GET /x"


def test_attempts_exhausted_raises_the_last_error_itself() -> None:
    fake = FakeTime()
    errors = [status_error(ServerError, 500, request_id=str(i)) for i in range(4)]
    with pytest.raises(ServerError) as info:
        policy(fake).call(failing(*errors), endpoint="GET /x", idempotent=True)
    assert info.value is errors[-1] and info.value.attempts == 4
    assert len(fake.sleeps) == 3


def test_non_retryable_error_raises_after_one_attempt() -> None:
    fake = FakeTime()
    attempt = failing(status_error(NotFoundError, 404))
    with pytest.raises(NotFoundError):
        policy(fake).call(attempt, endpoint="GET /x", idempotent=True)
    assert len(attempt.budgets) == 1 and fake.sleeps == []  # type: ignore[attr-defined]


def test_a_non_retryable_error_after_retries_reports_its_attempt_number() -> None:
    fake = FakeTime()
    errors = [status_error(ServerError, 503), status_error(ServerError, 503)]
    with pytest.raises(NotFoundError) as info:
        policy(fake).call(
            failing(*errors, status_error(NotFoundError, 404)), endpoint="GET /x", idempotent=True
        )
    assert info.value.attempts == 3 and info.value.__context__ is None


def test_no_sleep_crosses_the_deadline() -> None:
    fake, events = FakeTime(), []  # type: ignore[var-annotated]
    # 0.6 s + 0.6 s of Retry-After does not fit into a 1.0 s budget.
    errors = [status_error(RateLimitError, 429, retry_after=0.6) for _ in range(3)]
    attempt = failing(*errors)
    with pytest.raises(DeadlineExceeded) as info:
        policy(fake, events, deadline=1.0).call(attempt, endpoint="GET /x", idempotent=True)
    assert fake.sleeps == [0.6] and len(attempt.budgets) == 2  # type: ignore[attr-defined]
    exc = info.value
    assert exc.last_error is errors[1] and exc.attempts == 2 and exc.status_code == 429
    assert exc.retry_after == 0.6 and "deadline" in str(exc) and "429" in str(exc)
    assert exc.retryable and exc.__context__ is None
    assert fake.now <= 1000.0 + 1.0


def test_each_attempt_gets_the_remaining_budget_as_timeout() -> None:
    fake = FakeTime()
    attempt = failing(status_error(ServerError, 502), status_error(ServerError, 502))
    p = policy(fake, jitter=0.0, backoff_initial=0.5)
    assert p.call(attempt, endpoint="GET /x", idempotent=True, deadline=fake.now + 5.0) == "ok"
    assert attempt.budgets == [5.0, 4.5, 3.5]  # type: ignore[attr-defined]
    unbounded = failing()
    p.call(unbounded, endpoint="GET /x", idempotent=True)
    assert unbounded.budgets == [None]  # type: ignore[attr-defined]


def test_caller_deadline_and_policy_deadline_the_earlier_wins() -> None:
    fake = FakeTime()
    p = policy(fake, deadline=10.0)
    assert p.resolve_deadline(None) == fake.now + 10.0
    assert p.resolve_deadline(fake.now + 3.0) == fake.now + 3.0
    assert p.resolve_deadline(fake.now + 30.0) == fake.now + 10.0
    assert policy(fake).resolve_deadline(None) is None


def test_a_passed_deadline_sends_nothing() -> None:
    fake = FakeTime()
    attempt = failing()
    with pytest.raises(DeadlineExceeded) as info:
        policy(fake).call(attempt, endpoint="GET /x", idempotent=True, deadline=fake.now - 1)
    assert attempt.budgets == [] and info.value.last_error is None  # type: ignore[attr-defined]
    assert "no request sent" in str(info.value)


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="deadline"):
        RetryPolicy(deadline=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=-1)
