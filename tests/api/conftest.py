"""Shared fixtures for the API client tests: a simulator on 127.0.0.1 and clients that never sleep.

Retries are real (real HTTP, real attempts in the simulator's request log); only the *sleeps*
between them are recorded instead of slept, so the suite stays fast and no assertion depends
on wall-clock timing.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient, TogetherRLError
from rl_sessions_dagster.api.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from rl_sessions_dagster.api.retries import RetryEvent
from rl_sessions_dagster.testing import RLSimulator

#: A recognisable key: every leak check scans for it.
KEY = "sk-SECRET-canary-123"


def status_error(cls: type[TogetherRLError], status: int, **kw: object) -> TogetherRLError:
    """An error as the client raises it for ``status``, retryable as the API marks it."""
    retryable = status in (408, 429) or status >= 500
    return cls(f"POST /x → {status}", status_code=status, retryable=retryable, **kw)  # type: ignore[arg-type]


#: The client errors that are never retried, with their status.
NEVER = [
    (BadRequestError, 400),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (UnprocessableEntityError, 422),
]


class RetryRecorder:
    """Records the retry events and sleeps of a client's policy instead of sleeping."""

    def __init__(self) -> None:
        self.events: list[RetryEvent] = []
        self.sleeps: list[float] = []

    def policy(self, **kw: object) -> RetryPolicy:
        return RetryPolicy(sleep=self.sleeps.append, on_retry=self.events.append, **kw)  # type: ignore[arg-type]


@pytest.fixture
def sim_options() -> dict[str, Any]:
    """The root ``sim`` fixture's options for the client tests (a test module may override)."""
    return {"api_key": KEY, "seed": 0}


@pytest.fixture
def retries() -> RetryRecorder:
    return RetryRecorder()


@pytest.fixture
def client(sim: RLSimulator, retries: RetryRecorder) -> Iterator[RLSessionsClient]:
    with RLSessionsClient(KEY, base_url=sim.base_url, timeout=5.0, retry=retries.policy()) as c:
        yield c


def leak_surface(exc: BaseException) -> str:
    """Everything a log, Dagster's error serialiser or a debugger would print."""
    parts = [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]
    parts += [repr(v) for v in vars(exc).values()]
    return "\n".join(parts)


def chain(exc: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def assert_clean(exc: BaseException, *secrets: str) -> None:
    for link in chain(exc):
        assert not isinstance(link, httpx.HTTPError), "an httpx error (with its request) is chained"
        surface = leak_surface(link)
        for secret in secrets:
            assert secret not in surface
    wrapped = RuntimeError("a sensor tick failed")
    wrapped.__cause__ = exc
    text = "".join(traceback.format_exception(wrapped))
    assert all(secret not in text for secret in secrets)
