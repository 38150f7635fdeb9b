"""Retry policy for RL API calls, on tenacity.

Semantics (why they differ from the SDK, which retries every method on 408/409/429/5xx):

* **What is retried.** Transport failures, 408, 429 and 5xx, and a 2xx with an undecodable body.
  400/401/403/404/409/422 never are: they will not change by asking again.
* **Non-idempotent requests** (session and model-resource creates, stops, PATCH,
  extend-expiry) are retried *only* when the request surely never reached the server
  (:attr:`TransportError.may_have_reached_server` is False). A 5xx, a read timeout or a dropped
  connection may hide a create that happened, and a retry could start a second billed session.
  A 429 on a create is usually the resource's session cap, which waiting seconds will not lift.
* **Delay.** ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date) when the server sends
  a positive one, capped at ``retry_after_cap``; otherwise tenacity's exponential backoff
  (``backoff_initial * 2**(n-1)`` capped at ``backoff_max``) plus up to ``jitter`` random seconds.
* **Deadline.** A call has a total budget (``RetryPolicy.deadline`` seconds and/or an absolute
  ``deadline`` from the caller, the earlier wins). No sleep is started that would end past the
  deadline, and each attempt gets the remaining budget as its timeout, so one call overruns its
  deadline by at most one httpx timeout granularity. Running out raises :class:`DeadlineExceeded`
  carrying the last error; running out of *attempts* raises the last error itself.
"""

from __future__ import annotations

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
    """What :attr:`RetryPolicy.on_retry` receives before each sleep.

    Everything in it is safe to log: ``endpoint`` is ``"METHOD /path"`` (no host, no query) and
    the error's text was scrubbed of the key when it was built. :meth:`describe` is the one-line
    form the Dagster integration writes to a run's or a tick's log.
    """

    endpoint: str
    attempt: int  # the attempt that just failed, 1-based
    error: TogetherRLError
    delay: float
    delay_source: DelaySource
    #: The policy's attempt limit (None when the event was built without one).
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
        """Whether the wait is the server's ``Retry-After`` rather than our backoff."""
        return self.delay_source == "retry-after"

    def failure(self) -> str:
        """``"HTTP 503 (ServerError)"`` or, with no response, the error class alone."""
        kind = type(self.error).__name__
        return kind if self.status_code is None else f"HTTP {self.status_code} ({kind})"

    def describe(self) -> str:
        """One key-free line: endpoint, failure, attempt n/max, wait and where it came from.

        The error's message is left out on purpose: it can quote a server body (scrubbed, but
        long); the request id is kept, since it is what support asks for.
        """
        of = f"/{self.max_attempts}" if self.max_attempts else ""
        source = "Retry-After honoured" if self.retry_after_honoured else "backoff"
        line = (
            f"Together API retry: {self.endpoint} failed with {self.failure()} on attempt "
            f"{self.attempt}{of}; retrying in {self.delay:.2f} s ({source})"
        )
        if self.error.request_id:
            line += f" [request_id={self.error.request_id}]"
        return line


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be delta-seconds (floats tolerated, like the SDK) or an HTTP date.
    Returns None when absent or unparseable; a date in the past gives a negative number.
    """
    candidates = ((headers.get("retry-after-ms"), 1000.0), (headers.get("retry-after"), 1.0))
    for raw, divisor in candidates:
        if raw is None:
            continue
        try:
            value = float(raw) / divisor
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    raw = headers.get("retry-after")
    if raw:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return when.timestamp() - time.time()
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one API call tries. Immutable; share one instance freely.

    ``sleep`` and ``clock`` exist for tests (and for callers with their own event loop): a fake
    sleep makes retry tests instant, a fake clock makes deadline tests deterministic. An absolute
    ``deadline`` passed to a client method is read on ``clock``.
    """

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
        if deadline is None or own is None:
            return deadline if own is None else own
        return min(deadline, own)

    def delay_for(self, error: BaseException | None) -> tuple[float | None, DelaySource]:
        """The server-requested delay (capped), or ``(None, "backoff")`` to use the backoff."""
        after = getattr(error, "retry_after", None)
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
        """Run ``attempt(remaining_seconds)`` until it succeeds or the policy gives up.

        ``attempt`` receives the budget left (None = unbounded) and should use it as its
        timeout. ``deadline`` is absolute, on :attr:`clock`.
        """
        deadline = self.resolve_deadline(deadline)
        give_up_at = _GiveUpAt(self, deadline)
        if deadline is not None and deadline - self.clock() < self.min_attempt_budget:
            raise DeadlineExceeded(f"{endpoint}: deadline already passed; no request sent")

        # The first attempt runs outside tenacity: most calls succeed at once, and building
        # and driving a ``Retrying`` was most of this client's per-request overhead.
        try:
            return attempt(None if deadline is None else max(deadline - self.clock(), 0.0))
        except TogetherRLError as exc:
            exc.attempts = 1
            if self.max_attempts == 1 or not should_retry(exc, idempotent=idempotent):
                raise
            first: TogetherRLError | None = exc
        # A retryable failure: tenacity takes over, and sees that failure as its attempt 1
        # (replayed, not re-sent), so waits, stops, events and give-ups are what they were.
        attempts = 1

        def run() -> T:
            nonlocal attempts, first
            if first is not None:
                replay, first = first, None
                raise replay
            attempts += 1
            try:
                return attempt(None if deadline is None else max(deadline - self.clock(), 0.0))
            except TogetherRLError as exc:
                exc.attempts = attempts  # also right for a 404 that follows two 503s
                raise


        out_of_attempts = tenacity.stop_after_attempt(self.max_attempts)
        retrying = tenacity.Retrying(
            # Attempts first, and only then the deadline (which remembers that it fired).
            stop=lambda rs: out_of_attempts(rs) or give_up_at(rs),
            wait=_Wait(self),
            retry=tenacity.retry_if_exception(lambda e: should_retry(e, idempotent=idempotent)),
            sleep=self.sleep,
            before_sleep=lambda rs: self._before_sleep(rs, endpoint),
            retry_error_callback=lambda rs: self._give_up(rs, endpoint, give_up_at.hit),
        )
        return retrying(run)

    def _before_sleep(self, state: tenacity.RetryCallState, endpoint: str) -> None:
        error = _failure(state)
        _, source = self.delay_for(error)
        log.info(
            "%s: attempt %d/%d failed (%s); retrying in %.2f s (%s)",
            endpoint, state.attempt_number, self.max_attempts, error, state.upcoming_sleep, source,
        )  # fmt: skip
        if self.on_retry is not None:
            self.on_retry(
                RetryEvent(
                    endpoint,
                    state.attempt_number,
                    error,
                    state.upcoming_sleep,
                    source,
                    max_attempts=self.max_attempts,
                )
            )

    def _give_up(
        self, state: tenacity.RetryCallState, endpoint: str, by_deadline: bool
    ) -> NoReturn:
        error = _failure(state)
        if by_deadline:  # (``or`` short-circuits: exhausted attempts never set this)
            exc = DeadlineExceeded(
                f"{endpoint}: deadline reached after {state.attempt_number} attempt(s); "
                f"last error: {error}",
                last_error=error,
                status_code=error.status_code,
                method=error.method,
                url=error.url,
                request_id=error.request_id,
                retry_after=error.retry_after,
            )
            exc.attempts = state.attempt_number
            raise exc
        raise error


def should_retry(error: BaseException, *, idempotent: bool) -> bool:
    """Whether a failed attempt may be repeated (see the module docstring)."""
    if isinstance(error, TransportError):
        return idempotent or not error.may_have_reached_server
    return idempotent and isinstance(error, TogetherRLError) and error.retryable


def _failure(state: tenacity.RetryCallState) -> TogetherRLError:
    assert state.outcome is not None
    error = state.outcome.exception()
    assert isinstance(error, TogetherRLError), "only TogetherRLError is ever retried"
    return error


class _Wait:
    """Retry-After when the server sent one, else tenacity's exponential backoff with jitter."""

    def __init__(self, policy: RetryPolicy) -> None:

        self._policy = policy
        # == wait_exponential_jitter, spelled so it works on tenacity 8.2 and 9.x alike (9.x
        # deprecates ``initial``; 8.2 lacks ``multiplier``).
        self._backoff = tenacity.wait_exponential(
            multiplier=policy.backoff_initial, max=policy.backoff_max
        ) + tenacity.wait_random(0, policy.jitter)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        delay, _ = self._policy.delay_for(outcome.exception() if outcome else None)
        return self._backoff(retry_state) if delay is None else delay


class _GiveUpAt:
    """Stop when the upcoming sleep plus a minimal attempt would end past the deadline.

    Remembers that it fired, so the give-up callback can tell a deadline from exhausted attempts.
    """

    def __init__(self, policy: RetryPolicy, deadline: float | None) -> None:
        self._policy = policy
        self._deadline = deadline
        self.hit = False

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        if self._deadline is None:
            return False
        next_start = self._policy.clock() + retry_state.upcoming_sleep
        self.hit = next_start + self._policy.min_attempt_budget > self._deadline
        return self.hit
