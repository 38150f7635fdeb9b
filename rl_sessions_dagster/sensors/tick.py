"""One tick skeleton for every sensor family: sessions, model resources, the idle guard.

What a tick must get right is the same whatever it watches, so it is written once here and a
family supplies only its body (read → decide → run requests):

* **Budget.** Every API call of the tick shares one deadline, kept under the daemon's gRPC
  sensor timeout (:func:`tick_budget`).
* **The API's clock.** The client records the HTTP ``Date`` of each response; the body judges
  time by it (:meth:`Tick.api_now_ms`), never by a skewed local clock.
* **Transient failures** (5xx, 429, timeouts, unreadable bodies) end the tick with a
  SkipReason and the cursor kept: the next tick retries and nothing is lost.
* **Outage alarm.** When every tick has failed for longer than ``alarm_after_s``, one tick
  fails loudly (a red tick, a sensor-failure alert), then the sensor goes on retrying quietly.
* **Cursor recovery.** An unreadable cursor is restored from the sensor's own tick history
  (:mod:`.cursor_history`) instead of silently starting over.
* **One log line** per tick: what the body did, API requests, retries and time; each API
  retry is a WARNING line of the tick's own log (:func:`~..resource.retry_log.tick_retry_log`).
"""

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

import dagster as dg

from ..api import RLSessionsClient, ServerClock
from ..api.errors import DeadlineExceeded, DecodeError, RateLimitError, ServerError, TransportError
from ..resource import TogetherRLResource
from ..resource.retry_log import RetryLog, tick_retry_log
from .cursor_history import previous_tick_failed_loudly, read_state

#: Failures that end a tick quietly (SkipReason, cursor kept): the next tick retries.
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)
UNAVAILABLE = "Together RL API unavailable"


class TogetherRLUnavailableError(Exception):
    """Every tick has failed to read the API for longer than the sensor's alarm threshold."""


class TickState(Protocol):
    """What the skeleton needs of a family's state (which is also its cursor)."""

    initialized: bool
    failing_since_ms: int | None

    def to_cursor(self) -> str: ...


S = TypeVar("S", bound=TickState)


def tick_budget(requested: float) -> float:
    """The budget, kept 15 s under the daemon's gRPC sensor timeout if that is set lower."""
    raw = os.getenv("DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS") or os.getenv(
        "DAGSTER_GRPC_TIMEOUT_SECONDS"
    )
    try:
        grpc_timeout = float(raw) if raw else 60.0
    except ValueError:
        grpc_timeout = 60.0
    return max(1.0, min(requested, grpc_timeout - 15.0))


def local_now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


@dataclass
class Tick:
    """One tick's context, client, clock and deadline, handed to a family's body."""

    context: dg.SensorEvaluationContext
    client: RLSessionsClient
    clock: ServerClock
    started: float
    deadline: float
    #: the local clock when the tick began (bodies that need the API's use ``api_now_ms``).
    now_ms: int

    def out_of_time(self, reserve: float = 0.0) -> bool:
        return time.monotonic() > self.deadline - reserve

    def api_now_ms(self) -> int:
        """The API's clock as of its last response, else the local one."""
        return self.clock.last_ms or local_now_ms()


@dataclass
class TickOutcome(Generic[S]):
    """What a body decided: the next state and what to ask of Dagster."""

    state: S
    summary: str
    run_requests: list[dg.RunRequest] = field(default_factory=list)
    partition_requests: Sequence[dg.AddDynamicPartitionsRequest] = ()
    asset_events: Sequence[dg.AssetMaterialization] = ()
    #: API requests the body counts itself (default: the client's HTTP attempts).
    requests: int | None = None


@dataclass(frozen=True)
class SensorFamily(Generic[S]):
    """How a family's state is read from and started without a cursor."""

    parse: Callable[[str | None], S]
    fresh: Callable[[], S]


def run_tick(
    context: dg.SensorEvaluationContext,
    family: SensorFamily[S],
    body: Callable[[Tick, S], TickOutcome[S]],
    *,
    resource_key: str,
    budget: float,
    alarm_after_s: float,
) -> dg.SensorResult | dg.SkipReason:
    """One tick: cursor (recovered if unreadable) → the body, inside the budget and with the
    transient-failure and outage rules → one log line → ``SensorResult``.

    The API retries of the tick are written to the tick's log (``context.log``, which Dagster
    stores with the tick): the resource's clients pick the log up by themselves. Their count
    is logged at the end unless the summary line already gave it (a skipped tick)."""
    with tick_retry_log(context.log) as retries:
        result = _run_tick(context, family, body, retries, resource_key, budget, alarm_after_s)
    if retries.count and not retries.summarised:
        context.log.info(retries.summary())
    return result


def _run_tick(
    context: dg.SensorEvaluationContext,
    family: SensorFamily[S],
    body: Callable[[Tick, S], TickOutcome[S]],
    retries: RetryLog,
    resource_key: str,
    budget: float,
    alarm_after_s: float,
) -> dg.SensorResult | dg.SkipReason:
    started = time.monotonic()
    now_ms = local_now_ms()
    state = read_state(context, family.parse, family.fresh)
    resource: TogetherRLResource = getattr(context.resources, resource_key)
    clock = ServerClock()
    try:
        with resource.get_client(server_clock=clock) as client:
            tick = Tick(context, client, clock, started, started + budget, now_ms)
            out = body(tick, state)
    except TRANSIENT_ERRORS as exc:
        return unavailable(context, state, exc, now_ms, alarm_after_s)
    out.state.failing_since_ms = None
    elapsed_ms = int((time.monotonic() - started) * 1000)
    retried = retries.take_count()  # each retry is a WARNING line above this one
    requests = out.requests if out.requests is not None else client.stats.requests
    summary = f"{out.summary}; {requests} API request(s) ({retried} retried) in {elapsed_ms} ms"
    context.log.info(summary)
    return dg.SensorResult(
        run_requests=out.run_requests,
        skip_reason=None if out.run_requests else dg.SkipReason(summary),
        cursor=out.state.to_cursor(),
        dynamic_partitions_requests=list(out.partition_requests) or None,
        asset_events=list(out.asset_events) or None,
    )


def unavailable(
    context: dg.SensorEvaluationContext,
    state: TickState,
    exc: Exception,
    now_ms: int,
    alarm_after_s: float,
) -> dg.SensorResult | dg.SkipReason:
    """A transient failure skips the tick (cursor kept); one that persists fails one tick loudly
    per ``alarm_after_s`` window, then the sensor goes on retrying quietly."""
    since = state.failing_since_ms if state.failing_since_ms is not None else now_ms
    if previous_tick_failed_loudly(context, UNAVAILABLE + " for"):
        since = now_ms  # the alarm was raised: a new window starts
    elif now_ms - since >= alarm_after_s * 1000:
        raise TogetherRLUnavailableError(
            f"{UNAVAILABLE} for {int((now_ms - since) / 60000)} min: every tick since "
            f"{datetime.fromtimestamp(since / 1000, tz=UTC).isoformat(timespec='seconds')} "
            f"failed to read it (last error: {exc}). The sensor keeps retrying each tick and "
            "loses nothing; check the API status and the resource's base_url."
        )
    reason = f"{UNAVAILABLE}, will retry next tick: {exc}"
    if not state.initialized:
        return dg.SkipReason(reason)  # nothing to keep before the first successful tick
    state.failing_since_ms = since
    return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=state.to_cursor())
