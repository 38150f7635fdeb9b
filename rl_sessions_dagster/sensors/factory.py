"""Sensor factories: each tick reads the API within a time budget, runs the pure event core,
and returns a ``SensorResult`` with one RunRequest per wanted event.

One configurable factory, :func:`build_rl_event_sensor`, plus two presets for the usual
wiring: :func:`build_checkpoint_sensor` (evaluate each registered checkpoint, one dynamic
partition per checkpoint) and :func:`build_session_status_sensor` (report / alert / clean up
when a session reaches STOPPED, ERROR or EXPIRED). Each sensor keeps its own cursor.

The resource is a sensor requirement resolved by Dagster at tick time, never a closed-over
object: an unresolved ``EnvVar`` would otherwise be sent as the key itself (the bug of
dagster-fivetran's polling sensor).
"""

import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from ..api import (
    DeadlineExceeded,
    DecodeError,
    RateLimitError,
    ServerError,
    TransportError,
)
from ..assets.checkpoints import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS
from ..core import (
    CHECKPOINT_EVENTS,
    TERMINAL_EVENTS,
    EventKind,
    TrackerConfig,
    TrackerState,
    advance,
)
from ..core.poll import collect
from ..resource import ServerClock, TogetherRLResource
from .cursor_history import previous_tick_failed_loudly, read_tracker_state
from .run_requests import (
    RunRequestFn,
    checkpoint_materialization,
    default_run_request,
)
from .source import ClientSessionSource, SessionFilter

#: Failures that end a tick quietly (SkipReason, cursor kept): the next tick retries.
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)

DEFAULT_TICK_BUDGET_SECONDS = 40.0
#: pages of the unfiltered session list a tick may read for discovery (after the first tick).
DISCOVERY_PAGES_PER_TICK = 50
_UNAVAILABLE = "Together RL API unavailable"


class TogetherRLUnavailableError(Exception):
    """Every tick has failed to read the API for longer than the sensor's alarm threshold."""


def _unavailable(
    context: dg.SensorEvaluationContext,
    state: TrackerState,
    exc: Exception,
    now_ms: int,
    alarm_after_s: float,
) -> dg.SensorResult | dg.SkipReason:
    """A transient failure skips the tick (cursor kept); one that persists fails one tick loudly
    per ``alarm_after_s`` window, then the sensor goes on retrying quietly."""
    since = state.failing_since_ms if state.failing_since_ms is not None else now_ms
    if previous_tick_failed_loudly(context, _UNAVAILABLE + " for"):
        since = now_ms  # the alarm was raised: a new window starts
    elif now_ms - since >= alarm_after_s * 1000:
        raise TogetherRLUnavailableError(
            f"{_UNAVAILABLE} for {int((now_ms - since) / 60000)} min: every tick since "
            f"{datetime.fromtimestamp(since / 1000, tz=UTC).isoformat(timespec='seconds')} "
            f"failed to read it (last error: {exc}). The sensor keeps retrying each tick and "
            "loses nothing; check the API status and the resource's base_url."
        )
    reason = f"{_UNAVAILABLE}, will retry next tick: {exc}"
    if not state.initialized:
        return dg.SkipReason(reason)  # nothing to keep before the first successful tick
    state.failing_since_ms = since
    return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=state.to_cursor())


def _tick_budget(requested: float) -> float:
    """The budget, kept 15 s under the daemon's gRPC sensor timeout if that is set lower."""
    raw = os.getenv("DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS") or os.getenv(
        "DAGSTER_GRPC_TIMEOUT_SECONDS"
    )
    try:
        grpc_timeout = float(raw) if raw else 60.0
    except ValueError:
        grpc_timeout = 60.0
    return max(1.0, min(requested, grpc_timeout - 15.0))


def _kinds(event_kinds: Iterable[EventKind | str]) -> frozenset[EventKind]:
    kinds = frozenset(EventKind(k) for k in event_kinds)
    if not kinds:
        raise dg.DagsterInvalidDefinitionError("event_kinds must name at least one EventKind")
    return kinds


def build_rl_event_sensor(
    *,
    name: str,
    event_kinds: Iterable[EventKind | str],
    job: Any = None,
    target: Any = None,
    resource_key: str = "together",
    session_filter: SessionFilter | None = None,
    partitions_def: dg.DynamicPartitionsDefinition | None = None,
    checkpoint_asset_key: dg.AssetKey | None = None,
    run_request_fn: RunRequestFn | None = None,
    backfill: bool = False,
    max_runs_per_tick: int = 25,
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS,
    lookback_seconds: float = 600,
    registration_wait_seconds: float = 3600,
    page_size: int = 100,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
    unavailable_alarm_seconds: float = 600,
) -> dg.SensorDefinition:
    """A sensor that requests one run per wanted session event.

    Args:
        name: the sensor's name (also the key of its cursor; rename = start over).
        event_kinds: which :class:`EventKind` become runs (all others are only tracked).
        job / target: what the runs execute (as for ``@dg.sensor``).
        resource_key: key of the :class:`TogetherRLResource` in ``Definitions``.
        session_filter: which sessions to watch (model resource, creator, name glob, W&B).
        partitions_def: for checkpoint events, the dynamic partitions the job is partitioned
            by; the sensor adds one partition per checkpoint in the same ``SensorResult``.
        checkpoint_asset_key: if set, record a runless materialization of this (external,
            same-partitioned) asset per checkpoint event, for ``AutomationCondition.eager()``.
        run_request_fn: reshape each RunRequest (run config, tags) or drop it (return None).
        backfill: on the first tick, announce history too (default: only what happens next).
        max_runs_per_tick: cap; later events follow on the next ticks, in order.
        tick_budget_seconds: wall time a tick may spend on the API, retries included (kept
            under Dagster's 60 s sensor timeout); unread work is left for the next tick.
        lookback_seconds: how far back the scan for sessions born and ended between ticks
            reaches behind the newest session seen (covers clock and visibility lag).
        registration_wait_seconds: how long an unregistered checkpoint is re-checked.
        page_size: list page size (1-100).
        unavailable_alarm_seconds: when every tick has failed to read the API (5xx, timeouts,
            connection errors) for this long, one tick fails loudly (red in the UI); the
            sensor keeps retrying. Configuration errors (key, DNS, TLS) fail every tick.
    """
    kinds = _kinds(event_kinds)
    if not max_runs_per_tick >= 1:
        raise dg.DagsterInvalidDefinitionError("max_runs_per_tick must be at least 1")
    if not 1 <= page_size <= 100:
        raise dg.DagsterInvalidDefinitionError("page_size must be between 1 and 100")
    config = TrackerConfig(
        kinds=kinds,
        max_events=max_runs_per_tick,
        lookback_ms=int(lookback_seconds * 1000),
        registration_wait_ms=int(registration_wait_seconds * 1000),
        backfill=backfill,
    )
    session_filter = session_filter or SessionFilter()
    budget = _tick_budget(tick_budget_seconds)

    @dg.sensor(
        name=name,
        job=job,
        target=target,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=description
        or f"Together RL events ({', '.join(sorted(k.value for k in kinds))}) → runs.",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        started = time.monotonic()
        deadline = started + budget
        now_ms = int(datetime.now(UTC).timestamp() * 1000)
        state = read_tracker_state(context)
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        clock = ServerClock()
        with resource.get_client(server_clock=clock) as client:
            source = ClientSessionSource(
                client,
                session_filter,
                deadline=deadline,
                page_size=page_size,
                server_clock=clock,
            )
            reserve = min(5.0, budget / 4)
            try:
                collected = collect(
                    state,
                    config,
                    source,
                    now_ms=now_ms,
                    out_of_time=lambda: time.monotonic() > deadline - reserve,
                    transient=TRANSIENT_ERRORS,
                    discovery_pages_per_tick=DISCOVERY_PAGES_PER_TICK,
                )
            except TRANSIENT_ERRORS as exc:
                return _unavailable(context, state, exc, now_ms, unavailable_alarm_seconds)
        for item in source.skipped:
            context.log.warning(
                f"skipped an unreadable item of the API's lists (id {item.id or 'unreadable'}, "
                f"field {item.field or '(the item)'}: {item.reason}); it is read again when "
                "it is listed again"
            )
        for sid in collected.unreadable:
            context.log.warning(f"session {sid} could not be read; it is fetched again next tick")
        outcome = advance(state, collected.observation, config)
        outcome.state.failing_since_ms = None
        for note in outcome.notes:
            context.log.warning(note)

        run_requests: list[dg.RunRequest] = []
        partition_keys: list[str] = []
        asset_events: list[dg.AssetMaterialization] = []
        for event in outcome.events:
            request: dg.RunRequest | None = default_run_request(
                event, partitioned=partitions_def is not None
            )
            if run_request_fn is not None and request is not None:
                request = run_request_fn(event, request)
            if request is None:
                continue
            run_requests.append(request)
            if event.checkpoint is not None:
                if partitions_def is not None and request.partition_key:
                    partition_keys.append(request.partition_key)
                if checkpoint_asset_key is not None:
                    mat = checkpoint_materialization(event, checkpoint_asset_key)
                    if mat is not None:
                        asset_events.append(mat)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        summary = (
            f"{len(run_requests)} run(s) from {len(outcome.events)} event(s); "
            f"{collected.requests} API request(s) in {elapsed_ms} ms; "
            f"tracking {len(outcome.state.tracked)} session(s)"
        )
        if outcome.deferred:
            summary += f"; more events than max_runs_per_tick={max_runs_per_tick}, rest next tick"
        if collected.interrupted:
            summary += f"; read stopped early ({collected.interrupted}), rest next tick"
        unreadable = len(source.skipped) + len(collected.unreadable)
        if unreadable:
            summary += f"; {unreadable} unreadable item(s) skipped (retried when read again)"
        context.log.info(summary)
        partitions_requests = []
        if partitions_def is not None and partition_keys:
            partitions_requests.append(
                partitions_def.build_add_request(list(dict.fromkeys(partition_keys)))
            )
        cursor = outcome.state.to_cursor()
        if not run_requests:
            return dg.SensorResult(
                skip_reason=dg.SkipReason(summary),
                cursor=cursor,
                dynamic_partitions_requests=partitions_requests,
                asset_events=asset_events,
            )
        return dg.SensorResult(
            run_requests=run_requests,
            cursor=cursor,
            dynamic_partitions_requests=partitions_requests,
            asset_events=asset_events,
        )

    return _sensor


def build_checkpoint_sensor(
    *,
    name: str = "together_rl_checkpoint_sensor",
    job: Any = None,
    target: Any = None,
    event_kinds: Iterable[EventKind | str] = (EventKind.CHECKPOINT_REGISTERED,),
    partitions_def: dg.DynamicPartitionsDefinition | None = CHECKPOINT_PARTITIONS,
    checkpoint_asset_key: dg.AssetKey | None = CHECKPOINT_ASSET_KEY,
    **kwargs: Any,
) -> dg.SensorDefinition:
    """One run per newly registered inference checkpoint, partitioned by checkpoint.

    Use ``event_kinds=[EventKind.CHECKPOINT_CREATED]`` for models that never register
    (e.g. MiniMax-M3, whose checkpoints are downloaded instead).
    """
    kinds = _kinds(event_kinds)
    if not kinds <= CHECKPOINT_EVENTS:
        raise dg.DagsterInvalidDefinitionError("build_checkpoint_sensor takes checkpoint events")
    return build_rl_event_sensor(
        name=name,
        job=job,
        target=target,
        event_kinds=kinds,
        partitions_def=partitions_def,
        checkpoint_asset_key=checkpoint_asset_key,
        **kwargs,
    )


def build_session_status_sensor(
    *,
    name: str = "together_rl_session_status_sensor",
    job: Any = None,
    target: Any = None,
    event_kinds: Iterable[EventKind | str] = tuple(TERMINAL_EVENTS),
    **kwargs: Any,
) -> dg.SensorDefinition:
    """One run per session that reaches STOPPED, ERROR or EXPIRED (or the kinds given)."""
    return build_rl_event_sensor(
        name=name, job=job, target=target, event_kinds=event_kinds, **kwargs
    )
