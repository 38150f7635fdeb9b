"""Retry policy on tenacity. Unlike the SDK, no 4xx but 408/429 is retried, nor a non-idempotent
request that may have reached the server (a second billed session); Retry-After beats backoff."""

from __future__ import annotations

import contextlib
import email.utils
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NoReturn, TypeVar

import httpx
import tenacity

from .errors import DeadlineExceeded, TogetherRLError, TransportError

T = TypeVar("T")
log = logging.getLogger("rl_sessions_dagster.api")

DelaySource = Literal["retry-after", "backoff"]


@dataclass(frozen=True)
class RetryEvent:
    """What :attr:`RetryPolicy.on_retry` receives before each sleep. Safe to log: ``endpoint``
    is ``"METHOD /path"`` (no host, no query) and the error's text was scrubbed of the key."""

    endpoint: str
    attempt: int  # the attempt that just failed, 1-based
    error: TogetherRLError
    delay: float
    delay_source: DelaySource
    max_attempts: int | None = None

    @property
    def method(self) -> str:
        return self.endpoint.partition(" ")[0]

    @property
    def path(self) -> str:
        return self.endpoint.partition(" ")[2]

    @property
    def status_code(self) -> int | None:
        return self.error.status_code

    @property
    def retry_after_honoured(self) -> bool:
        return self.delay_source == "retry-after"

    def describe(self) -> str:
        """One key-free log line: the request id (support asks for it), no message (long bodies)."""
        kind = type(self.error).__name__
        failure = kind if self.status_code is None else f"HTTP {self.status_code} ({kind})"
        of = f"/{self.max_attempts}" if self.max_attempts else ""
        source = "Retry-After honoured" if self.retry_after_honoured else "backoff"
        line = (
            f"Together API retry: {self.endpoint} failed with {failure} on attempt "
            f"{self.attempt}{of}; retrying in {self.delay:.2f} s ({source})"
        )
        if self.error.request_id:
            line += f" [request_id={self.error.request_id}]"
        return line


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``Retry-After``
    (delta-seconds, floats tolerated like the SDK, or an HTTP date, which may be past: < 0)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        with contextlib.suppress(TypeError, ValueError):  # TypeError: the header is absent
            if math.isfinite(value := float(headers.get(name)) / divisor):
                return value
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(headers.get("retry-after"))
        return when.timestamp() - time.time()
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries; immutable. A fake ``sleep`` and ``clock`` make tests instant."""

    max_attempts: int = 4
    backoff_initial: float = 0.5
    backoff_max: float = 8.0
    #: Upper bound of the random seconds added to each backoff delay.
    jitter: float = 0.5
    retry_after_cap: float = 30.0
    #: Total seconds per call, sleeps included; None = only the attempt limit applies.
    deadline: float | None = None
    #: An attempt needs at least this much budget left to be worth starting.
    min_attempt_budget: float = 0.05
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    on_retry: Callable[[RetryEvent], None] | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be >= 1")
        for name in ("backoff_initial", "backoff_max", "jitter", "retry_after_cap"):
            if getattr(self, name) < 0:
                raise ValueError(f"RetryPolicy.{name} must be >= 0")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError("RetryPolicy.deadline must be > 0 seconds (or None)")

    def resolve_deadline(self, deadline: float | None) -> float | None:
        """The absolute deadline of a call starting now: the earlier of the two budgets."""
        own = None if self.deadline is None else self.clock() + self.deadline
        return own if deadline is None else deadline if own is None else min(deadline, own)

    def _delay(self, state: tenacity.RetryCallState) -> tuple[float | None, DelaySource]:
        after = _failure(state).retry_after
        if after is not None and after > 0:
            return min(after, self.retry_after_cap), "retry-after"
        return None, "backoff"

    def call(
        self,
        attempt: Callable[[float | None], T],
        *,
        endpoint: str,
        idempotent: bool,
        deadline: float | None = None,
    ) -> T:
        """Run ``attempt(remaining_seconds)`` (None = unbounded; use it as the timeout) until it
        succeeds or the policy gives up. ``deadline`` is absolute, on :attr:`clock`."""
        deadline = self.resolve_deadline(deadline)
        if deadline is not None and deadline - self.clock() < self.min_attempt_budget:
            raise DeadlineExceeded(f"{endpoint}: deadline already passed; no request sent")
        attempts = 0
        by_deadline = False

        def run() -> T:
            nonlocal attempts
            attempts += 1
            try:
                return attempt(None if deadline is None else max(deadline - self.clock(), 0.0))
            except TogetherRLError as exc:
                exc.attempts = attempts  # also right for a 404 that follows two 503s
                raise

        backoff = tenacity.wait_exponential(
            multiplier=self.backoff_initial, max=self.backoff_max
        ) + tenacity.wait_random(0, self.jitter)  # == wait_exponential_jitter on 8.2 and 9.x

        def wait(state: tenacity.RetryCallState) -> float:
            delay, _ = self._delay(state)
            return backoff(state) if delay is None else delay

        def stop(state: tenacity.RetryCallState) -> bool:
            # Attempts first, then the deadline: no sleep plus minimal attempt past it.
            nonlocal by_deadline
            if state.attempt_number >= self.max_attempts:
                return True
            if deadline is not None:
                next_start = self.clock() + state.upcoming_sleep
                by_deadline = next_start + self.min_attempt_budget > deadline
            return by_deadline

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error, (_, source) = _failure(state), self._delay(state)
            n, delay = state.attempt_number, state.upcoming_sleep
            log.info(
                "%s: attempt %d/%d failed (%s); retrying in %.2f s (%s)",
                endpoint,
                n,
                self.max_attempts,
                error,
                delay,
                source,
            )
            if self.on_retry is not None:
                self.on_retry(RetryEvent(endpoint, n, error, delay, source, self.max_attempts))

        def give_up(state: tenacity.RetryCallState) -> NoReturn:
            error = _failure(state)
            if not by_deadline:
                raise error
            exc = DeadlineExceeded(
                f"{endpoint}: deadline reached after {state.attempt_number} attempt(s); "
                f"last error: {error}",
                last_error=error,
                **{k: getattr(error, k) for k in ("status_code", "method", "url", "request_id")},
                retry_after=error.retry_after,
            )
            exc.attempts = state.attempt_number
            raise exc

        retrying = tenacity.Retrying(
            stop=stop,
            wait=wait,
            retry=tenacity.retry_if_exception(lambda e: should_retry(e, idempotent=idempotent)),
            sleep=self.sleep,
            before_sleep=before_sleep,
            retry_error_callback=give_up,
        )
        return retrying(run)


def should_retry(error: BaseException, *, idempotent: bool) -> bool:
    if isinstance(error, TransportError):
        return idempotent or not error.may_have_reached_server
    return idempotent and isinstance(error, TogetherRLError) and error.retryable


def _failure(state: tenacity.RetryCallState) -> TogetherRLError:
    assert state.outcome is not None
    error = state.outcome.exception()
    assert isinstance(error, TogetherRLError), "only TogetherRLError is ever retried"
    return error
