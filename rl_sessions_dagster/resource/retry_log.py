"""Every retry of the API client as a WARNING in the Dagster log of the run or tick that made it,
counted: the ``rl_sessions_dagster.api`` Python logger is forwarded by nothing, so without this a
retried 503 would leave no trace in the event log. No Dagster import: any object with
``warning``/``info`` is a log.
"""

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from ..api.retries import RetryEvent


class Log(Protocol):
    """``logging.Logger``, Dagster's ``context.log`` and its log manager all qualify."""

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class RetryLog:
    """An ``on_retry`` hook: one WARNING per retry, counted per endpoint; thread-safe, so one
    serves every client of a tick."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.by_endpoint: Counter[str] = Counter()
        #: Set once a summary line has reported :attr:`count` (see :meth:`take_count`).
        self.summarised = False
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return self.by_endpoint.total()

    def __call__(self, event: RetryEvent) -> None:
        with self._lock:
            self.by_endpoint[event.endpoint] += 1
        self.log.warning(event.describe())  # no args: a '%' in a path is never formatted

    def take_count(self) -> int:
        """The count, for a summary line that reports it (no extra summary is then written)."""
        self.summarised = True
        return self.count

    def summary(self) -> str:
        """``"3 API request(s) retried this tick: GET /v1/rl/training-sessions (3)"``."""
        parts = ", ".join(f"{endpoint} ({n})" for endpoint, n in self.by_endpoint.most_common())
        return f"{self.count} API request(s) retried this tick: {parts}"


_TICK: ContextVar[RetryLog | None] = ContextVar("rl_sessions_dagster_tick_retry_log", default=None)


@contextlib.contextmanager
def tick_retry_log(log: Log) -> Iterator[RetryLog]:
    """While a tick is evaluated, the resource's clients log retries to ``log``: a context
    variable, so nothing process-wide changes and a tick in another thread keeps its own."""
    retries = RetryLog(log)
    token = _TICK.set(retries)
    try:
        yield retries
    finally:
        _TICK.reset(token)


def current_tick_retry_log() -> RetryLog | None:
    """The retry log of the sensor tick being evaluated in this context, if any."""
    return _TICK.get()
