"""The tick every API-reading sensor shares: one deadline under the daemon's gRPC timeout,
transient failures as skips that keep the cursor, an outage alarm, cursor recovery from the
tick history, one log line per tick. A family supplies only its body.
"""

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Generic, Protocol, Self, TypeVar

import dagster as dg

from ..api import RLSessionsClient, ServerClock
from ..api.errors import DeadlineExceeded, DecodeError, RateLimitError, ServerError, TransportError
from ..core.state import CursorError
from ..partitions import Job
from ..resource import TogetherRLResource
from ..resource.retry_log import tick_retry_log
from .options import TickOptions

#: Failures that end a tick quietly (SkipReason, cursor kept): the next tick retries.
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)
UNAVAILABLE = "Together RL API unavailable"
HISTORY_DEPTH = 500  # past ticks searched for a readable cursor


class TogetherRLUnavailableError(Exception):
    """Every tick has failed to read the API for longer than the sensor's alarm threshold."""


class TickState(Protocol):
    """A family's state, which is also its cursor."""

    initialized: bool
    failing_since_ms: int | None

    def __init__(self) -> None: ...

    @classmethod
    def from_cursor(cls, cursor: str | None) -> Self: ...

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
    #: the local clock when the tick began (``clock.last_ms`` is the API's).
    now_ms: int

    def out_of_time(self, reserve: float = 0.0) -> bool:
        return time.monotonic() > self.deadline - reserve


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


Body = Callable[[Tick, S], TickOutcome[S]]


def tick_sensor(
    state_type: type[S],
    body: Body[S],
    options: TickOptions,
    *,
    name: str,
    jobs: Sequence[Job],
    minimum_interval_seconds: int,
    default_status: dg.DefaultSensorStatus,
    description: str,
) -> dg.SensorDefinition:
    """A sensor running ``body`` in the skeleton. The resource is a requirement Dagster resolves
    at tick time, never a closed-over object (an unresolved ``EnvVar`` would be sent as the
    key). Each API retry is a WARNING line of the tick's log, stored with the tick."""
    budget = tick_budget(options.tick_budget_seconds)

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        with tick_retry_log(context.log) as retries:
            started, now_ms = time.monotonic(), local_now_ms()
            state = read_state(context, state_type)
            resource: TogetherRLResource = getattr(context.resources, options.resource_key)
            clock = ServerClock()
            try:
                with resource.get_client(server_clock=clock) as client:
                    tick = Tick(context, client, clock, started, started + budget, now_ms)
                    out = body(tick, state)
            except TRANSIENT_ERRORS as exc:
                result = unavailable(context, state, exc, now_ms, options.unavailable_alarm_seconds)
            else:
                out.state.failing_since_ms = None
                elapsed_ms = int((time.monotonic() - started) * 1000)
                retried = retries.take_count()  # each retry is a WARNING line above this one
                requests = out.requests if out.requests is not None else client.stats.requests
                summary = f"{out.summary}; {requests} API request(s) ({retried} retried) in "
                summary += f"{elapsed_ms} ms"
                context.log.info(summary)
                result = dg.SensorResult(
                    run_requests=out.run_requests,
                    skip_reason=None if out.run_requests else dg.SkipReason(summary),
                    cursor=out.state.to_cursor(),
                    dynamic_partitions_requests=list(out.partition_requests) or None,
                    asset_events=list(out.asset_events) or None,
                )
        if retries.count and not retries.summarised:
            context.log.info(retries.summary())
        return result

    return dg.SensorDefinition(
        evaluation_fn=evaluate,
        name=name,
        jobs=jobs,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={options.resource_key},
        description=description,
    )


def unavailable(
    context: dg.SensorEvaluationContext,
    state: TickState,
    exc: Exception,
    now_ms: int,
    alarm_after_s: float,
) -> dg.SensorResult | dg.SkipReason:
    """A transient failure skips the tick (cursor kept); a lasting one fails one tick loudly per
    ``alarm_after_s`` window."""
    since = state.failing_since_ms if state.failing_since_ms is not None else now_ms
    if previous_tick_failed_loudly(context, UNAVAILABLE + " for"):
        since = now_ms  # the alarm was raised: a new window starts
    elif now_ms - since >= alarm_after_s * 1000:
        raise TogetherRLUnavailableError(
            f"{UNAVAILABLE} for {int((now_ms - since) / 60000)} min: every tick since "
            f"{_iso(since / 1000)} failed to read it (last error: {exc}). The sensor keeps "
            "retrying each tick and loses nothing; check the API status and the resource's "
            "base_url."
        )
    reason = f"{UNAVAILABLE}, will retry next tick: {exc}"
    if not state.initialized:
        return dg.SkipReason(reason)  # nothing to keep before the first successful tick
    state.failing_since_ms = since
    return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=state.to_cursor())


# Dagster copies the cursor a tick produced into that tick's row, so a corrupt, truncated or
# unreadable cursor is restored from the newest readable one there: events since that tick are
# announced again and Dagster skips a run_key that already has a run. Starting over instead
# would silently drop every event since the last good tick.


def stored_ticks(context: dg.SensorEvaluationContext, limit: int = HISTORY_DEPTH) -> list:
    """The sensor's stored ticks, newest first; of several sensors of that name (other code
    locations), the one whose stored cursor is being evaluated."""
    try:
        instance = context.instance
    except Exception:  # built without an instance (a plain unit test)
        return []
    states = [
        s
        # Filtered here on the state's own fields: the type filter's enum is not public.
        for s in instance.all_instigator_state()
        if s.instigator_type.value == "SENSOR"
        and s.instigator_name == context.sensor_name
        and (
            context.repository_name is None
            or s.origin.repository_origin.repository_name == context.repository_name
        )
    ]
    states.sort(key=lambda s: getattr(s.instigator_data, "cursor", None) != context.cursor)
    return [
        t
        for s in states[:1]
        for t in instance.get_ticks(s.instigator_origin_id, s.selector_id, limit=limit)
    ]


def read_state(context: dg.SensorEvaluationContext, state_type: type[S]) -> S:
    """The state from the cursor, else from the tick history, else a fresh start (logged)."""
    try:
        return state_type.from_cursor(context.cursor)
    except CursorError as exc:
        problem = str(exc)
    for tick in stored_ticks(context):
        if not tick.cursor or tick.cursor == context.cursor:
            continue
        try:
            state = state_type.from_cursor(tick.cursor)
        except CursorError:
            continue
        context.log.warning(
            f"{problem}; restored the cursor of the tick at {_iso(tick.timestamp)} from this "
            "sensor's tick history: events since then are announced again, and Dagster skips "
            "any run_key that already has a run"
        )
        return state
    context.log.warning(
        f"{problem}; no readable cursor in this sensor's tick history: starting over from "
        "the current state of the API (what happened before now is not announced)"
    )
    return state_type()


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(int(epoch_s), tz=UTC).isoformat(timespec="seconds")


def previous_tick_failed_loudly(context: dg.SensorEvaluationContext, marker: str) -> bool:
    """Whether this sensor's newest stored tick failed with ``marker`` in its message."""
    ticks = stored_ticks(context, limit=1)
    error = ticks[0].error if ticks else None
    return error is not None and marker in (error.message or "")
