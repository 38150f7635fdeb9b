"""``TogetherRLResource``: configuration only, a fresh client per use, nothing called at load.
Each retry is a WARNING in the Dagster log of its run or tick (nothing forwards the api logger)."""

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol

import dagster as dg
from pydantic import Field, field_validator

from ..api import API_KEY_ENV, DEFAULT_BASE_URL, RetryPolicy, RLSessionsClient, ServerClock
from ..api.retries import RetryEvent
from ..storage.urls import check_target

#: Read when ``database_url`` is unset: where every table of the library goes.
TABLES_URL_ENV = "RL_TABLES_URL"


def _secret(description: str) -> Any:
    """Masked in the UI, never in a repr."""
    extra: dict[str, Any] = {"dagster__is_secret": True}
    return Field(default=None, repr=False, json_schema_extra=extra, description=description)


class Log(Protocol):
    """``logging.Logger``, Dagster's ``context.log`` and its log manager all qualify."""

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class RetryLog:
    """An ``on_retry`` hook: a WARNING per retry, counted per endpoint; thread-safe (one a tick)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.by_endpoint: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return self.by_endpoint.total()

    def __call__(self, event: RetryEvent) -> None:
        with self._lock:
            self.by_endpoint[event.endpoint] += 1
        self.log.warning(event.describe())  # no args: a '%' in a path is never formatted

    def summary(self) -> str:
        parts = ", ".join(f"{endpoint} ({n})" for endpoint, n in self.by_endpoint.most_common())
        return f"{self.count} API request(s) retried this tick: {parts}"


_TICK: ContextVar[RetryLog | None] = ContextVar("rl_sessions_dagster_tick_retry_log", default=None)


@contextlib.contextmanager
def tick_retry_log(log: Log) -> Iterator[RetryLog]:
    """The resource's clients log retries to ``log`` in this tick: a context variable, not global."""
    retries = RetryLog(log)
    token = _TICK.set(retries)
    try:
        yield retries
    finally:
        _TICK.reset(token)


class TogetherRLResource(dg.ConfigurableResource):
    """Together AI's RL API: ``TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))``; in
    tests, point ``base_url`` at :class:`rl_sessions_dagster.testing.RLSimulator`."""

    api_key: str | None = _secret(
        "Together API key, e.g. dg.EnvVar('TOGETHER_API_KEY'). Masked in the UI and never "
        f"printed. When unset, the {API_KEY_ENV} environment variable is read at use time."
    )
    base_url: str | None = Field(
        default=None,
        description=f"API origin (default {DEFAULT_BASE_URL}, or the TOGETHER_BASE_URL "
        "environment variable as in the official SDK); request paths carry /v1. http:// is "
        "accepted only for loopback hosts (the local simulator).",
    )
    request_timeout: float = Field(
        default=30.0, description="Seconds for one HTTP attempt (connect, read, write, pool)."
    )
    max_attempts: int = Field(
        default=4,
        description="Attempts per call on transport errors, 408, 429 and 5xx (1 = no retry).",
    )
    backoff_initial: float = Field(
        default=0.5, description="First exponential backoff delay in seconds (jitter added)."
    )
    backoff_max: float = Field(
        default=8.0, description="Largest exponential backoff delay in seconds (before jitter)."
    )
    backoff_jitter: float = Field(
        default=0.5, description="Upper bound of the random seconds added to each backoff delay."
    )
    retry_after_cap: float = Field(
        default=30.0, description="Longest Retry-After the client will honour, in seconds."
    )
    call_deadline: float | None = Field(
        default=None,
        description="Total seconds one call may take, retries and sleeps included (None: no "
        "limit beyond max_attempts). Sensors pass their own tick budget on top of this.",
    )
    database_url: str | None = _secret(
        "Where every table goes: a SQLAlchemy URL or a file path, e.g. dg.EnvVar("
        f"'{TABLES_URL_ENV}'). Masked in the UI. Unset: ${TABLES_URL_ENV}, else the Dagster "
        "instance's PostgreSQL (schema together_rl), else <DAGSTER_HOME>/together_rl_sync.sqlite. "
        "Never connected to at definitions load."
    )

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        # A literal is checked at load; an EnvVar (a str naming the variable) when a run opens.
        if value is not None and not isinstance(value, dg.EnvVar):
            check_target(value, "TogetherRLResource.database_url")
        return value

    def tables_url(self) -> tuple[str, str] | None:
        """The configured tables' URL or path and the setting naming it; None: the instance's."""
        if self.database_url:
            return self.database_url, "TogetherRLResource.database_url"
        if env := os.environ.get(TABLES_URL_ENV):
            return env, f"the {TABLES_URL_ENV} environment variable"
        return None

    def retry_policy(self, *, log: Log | None = None) -> RetryPolicy:
        """The configured policy, for your own HTTP calls too (retries logged as the client's)."""
        return RetryPolicy(
            max_attempts=self.max_attempts,
            backoff_initial=self.backoff_initial,
            backoff_max=self.backoff_max,
            jitter=self.backoff_jitter,
            retry_after_cap=self.retry_after_cap,
            deadline=self.call_deadline,
            on_retry=self._retry_log(log),
        )

    def get_client(
        self, *, server_clock: ServerClock | None = None, log: Log | None = None
    ) -> "RLSessionsClient":
        """A new client (close it, or ``with``); retries are WARNINGs on ``log``, else the run's."""
        return RLSessionsClient(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=self.request_timeout,
            retry=self.retry_policy(log=log),
            on_response=server_clock,
        )

    def _retry_log(self, log: Log | None) -> RetryLog | None:
        """``log``, else the tick's, else the run's (from Dagster); None outside Dagster."""
        if log is None:
            if (tick := _TICK.get()) is not None:
                return tick
            try:
                log = self.get_resource_context().log
            except Exception:  # built by hand, never initialised by Dagster
                return None
        return None if log is None else RetryLog(log)
