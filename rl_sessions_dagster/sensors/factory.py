"""Sensor factories: each tick reads the API within a time budget, runs the pure event core,
and returns a ``SensorResult`` with one RunRequest per wanted event.

:func:`build_routed_sensor` is the general form: one poll of the API per interval, each event
kind routed to a job or an asset selection (:class:`EventRoute`), so checkpoint evaluation
and session reports share one poll. :func:`build_rl_event_sensor` is the single-target form;
the presets in :mod:`.presets` wrap it for the usual wiring. Each sensor keeps its own cursor.

The resource is a sensor requirement resolved by Dagster at tick time, never a closed-over
object: an unresolved ``EnvVar`` would otherwise be sent as the key itself (the bug of
dagster-fivetran's polling sensor).

The tick body is :func:`_evaluate_tick`: read the cursor → ``collect`` → ``advance`` → build
run requests → ``SensorResult``. Everything above it only builds and checks definitions.
"""

import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)
from typing_extensions import Unpack

from ..api import (
    DeadlineExceeded,
    DecodeError,
    RateLimitError,
    ServerClock,
    ServerError,
    TransportError,
)
from ..core import (
    CHECKPOINT_EVENTS,
    EventKind,
    SessionEvent,
    TrackerConfig,
    TrackerState,
    advance,
)
from ..core.filters import SessionFilter
from ..core.poll import collect
from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS
from ..resource import TogetherRLResource
from ..retry_log import current_tick_retry_log
from .cursor_history import previous_tick_failed_loudly, read_tracker_state
from .definition import QuietSensorDefinition
from .options import (
    DEFAULT_TICK_BUDGET_SECONDS,  # noqa: F401 - imported from here by sensors/resources.py
    EventRoute,
    PollingKwargs,
    PollingOptions,
)
from .options import event_kinds as parse_event_kinds
from .run_requests import RunRequestFn, checkpoint_materialization, default_run_request
from .source import ClientSessionSource
from .targets import RouteTarget, check_at_tick, resolve_route

if TYPE_CHECKING:
    from dagster._core.definitions.asset_selection import CoercibleToAssetSelection
    from dagster._core.definitions.target import ExecutableDefinition

#: Failures that end a tick quietly (SkipReason, cursor kept): the next tick retries.
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)

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


@dataclass(frozen=True)
class SensorPlan:
    """Everything a tick needs, fixed when the sensor is defined."""

    name: str
    resource_key: str
    session_filter: SessionFilter
    options: PollingOptions
    config: TrackerConfig
    budget: float
    targets: tuple[RouteTarget, ...]
    checkpoint_asset_key: dg.AssetKey | None
    name_jobs: bool  # several targets: each RunRequest names its job
    announce: frozenset[EventKind] = frozenset()  # checkpoint kinds announced with no route

    def target_for(self, kind: EventKind) -> RouteTarget | None:
        for target in self.targets:
            if kind in target.route.kinds:
                return target
        return None


def _evaluate_tick(
    context: dg.SensorEvaluationContext, plan: SensorPlan
) -> dg.SensorResult | dg.SkipReason:
    """One tick: cursor → collect → advance → run requests → ``SensorResult``."""
    started = time.monotonic()
    deadline = started + plan.budget
    check_at_tick(context, plan.name, list(plan.targets))
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    state = read_tracker_state(context)
    resource: TogetherRLResource = getattr(context.resources, plan.resource_key)
    clock = ServerClock()
    with resource.get_client(server_clock=clock) as client:
        source = ClientSessionSource(
            client,
            plan.session_filter,
            deadline=deadline,
            page_size=plan.options.page_size,
            server_clock=clock,
        )
        reserve = min(5.0, plan.budget / 4)
        try:
            collected = collect(
                state,
                plan.config,
                source,
                now_ms=now_ms,
                out_of_time=lambda: time.monotonic() > deadline - reserve,
                transient=TRANSIENT_ERRORS,
                discovery_pages_per_tick=DISCOVERY_PAGES_PER_TICK,
            )
        except TRANSIENT_ERRORS as exc:
            return _unavailable(context, state, exc, now_ms, plan.options.unavailable_alarm_seconds)
    for item in source.skipped:
        context.log.warning(
            f"skipped an unreadable item of the API's lists (id {item.id or 'unreadable'}, "
            f"field {item.field or '(the item)'}: {item.reason}); it is read again when "
            "it is listed again"
        )
    for sid in collected.unreadable:
        context.log.warning(f"session {sid} could not be read; it is fetched again next tick")
    outcome = advance(state, collected.observation, plan.config)
    outcome.state.failing_since_ms = None
    for note in outcome.notes:
        context.log.warning(note)

    built = _build_requests(outcome.events, plan)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    tick_retries = current_tick_retry_log()  # each retry is a WARNING line above this one
    retried = tick_retries.take_count() if tick_retries else client.stats.retries
    summary = (
        f"{len(built.run_requests)} run(s) from {len(outcome.events)} event(s); "
        f"{collected.requests} API request(s) ({retried} retried) in {elapsed_ms} ms; "
        f"tracking {len(outcome.state.tracked)} session(s)"
    )
    if outcome.deferred:
        summary += (
            f"; more events than max_runs_per_tick={plan.options.max_runs_per_tick}, rest next tick"
        )
    if collected.interrupted:
        summary += f"; read stopped early ({collected.interrupted}), rest next tick"
    unreadable = len(source.skipped) + len(collected.unreadable)
    if unreadable:
        summary += f"; {unreadable} unreadable item(s) skipped (retried when read again)"
    context.log.info(summary)
    return dg.SensorResult(
        run_requests=built.run_requests,
        skip_reason=None if built.run_requests else dg.SkipReason(summary),
        cursor=outcome.state.to_cursor(),
        dynamic_partitions_requests=built.partition_requests(),
        asset_events=built.asset_events,
    )


@dataclass
class _Built:
    run_requests: list[dg.RunRequest]
    asset_events: list[dg.AssetMaterialization]
    partition_keys: dict[str, tuple[dg.DynamicPartitionsDefinition, list[str]]]

    def add_partition(self, partitions_def: dg.DynamicPartitionsDefinition, key: str) -> None:
        entry = self.partition_keys.setdefault(str(partitions_def.name), (partitions_def, []))
        entry[1].append(key)

    def partition_requests(self) -> list[dg.AddDynamicPartitionsRequest]:
        return [
            pdef.build_add_request(list(dict.fromkeys(keys)))
            for pdef, keys in self.partition_keys.values()
            if keys
        ]


def _build_requests(events: Sequence[SessionEvent], plan: SensorPlan) -> _Built:
    built = _Built([], [], {})
    for event in events:
        target = plan.target_for(event.kind)
        if target is None:
            if event.kind in plan.announce:
                _announce(built, event, plan.checkpoint_asset_key)
            continue
        route = target.route
        request: dg.RunRequest | None = default_run_request(event, partitioned=route.partitioned)
        if plan.name_jobs and request is not None:
            request = request.with_replaced_attrs(job_name=target.job_name)
        if route.run_request_fn is not None and request is not None:
            request = route.run_request_fn(event, request)
        if request is None:
            continue
        built.run_requests.append(request)
        if event.checkpoint is None:
            continue
        if route.partitioned and route.partitions_def is not None and request.partition_key:
            built.add_partition(route.partitions_def, request.partition_key)
        _announce(built, event, plan.checkpoint_asset_key)
    return built


def _announce(built: _Built, event: SessionEvent, asset_key: dg.AssetKey | None) -> None:
    """The checkpoint's partition and the runless materialization of the checkpoint asset."""
    if asset_key is None:
        return
    mat = checkpoint_materialization(event, asset_key)
    if mat is not None and mat.partition is not None:
        built.add_partition(CHECKPOINT_PARTITIONS, str(mat.partition))
        built.asset_events.append(mat)


def _overlaps(routes: Sequence[EventRoute]) -> set[EventKind]:
    seen: set[EventKind] = set()
    overlap: set[EventKind] = set()
    for route in routes:
        overlap |= seen & route.kinds
        seen |= route.kinds
    return overlap


def build_routed_sensor(
    *,
    name: str,
    routes: Sequence[EventRoute],
    resource_key: str = "together",
    session_filter: SessionFilter | None = None,
    checkpoint_asset_key: dg.AssetKey | None = CHECKPOINT_ASSET_KEY,
    options: PollingOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
    announce: Iterable[EventKind | str] = (),
) -> dg.SensorDefinition:
    """One sensor, one poll of the API per tick, each event kind routed to its own target.

    Args:
        name: the sensor's name (also the key of its cursor; rename = start over).
        routes: which event kinds go where; each kind to at most one route. Kinds in no
            route are only tracked.
        resource_key: key of the :class:`TogetherRLResource` in ``Definitions``.
        session_filter: which sessions to watch (model resource, creator, name glob, W&B).
        checkpoint_asset_key: record a runless materialization of this asset (partitioned by
            ``CHECKPOINT_PARTITIONS``) per checkpoint event; ``None`` to disable.
        options: polling knobs (:class:`PollingOptions`).
        minimum_interval_seconds, default_status, description: as for ``@dg.sensor``.
        announce: checkpoint kinds (``checkpoint_registered``, ``checkpoint_created``) whose
            partition is added and runless materialization recorded even when no route runs
            them. With ``routes=[]`` the sensor only announces: assets downstream of the
            checkpoint asset follow with ``AutomationCondition.eager()``.

    Raises:
        DagsterInvalidDefinitionError: no routes and nothing announced, a kind in two routes,
            announce without a checkpoint asset or with a session kind, or a checkpoint route
            whose target is not partitioned by its ``partitions_def`` (``CHECKPOINT_PARTITIONS``).
    """
    announced = parse_event_kinds(announce) if announce else frozenset()
    if not routes and not announced:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' needs at least one EventRoute, or checkpoint kinds to announce"
        )
    if announced and (checkpoint_asset_key is None or not announced <= CHECKPOINT_EVENTS):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}': announce takes checkpoint kinds "
            f"({', '.join(sorted(k.value for k in CHECKPOINT_EVENTS))}) and needs "
            "checkpoint_asset_key (the asset whose partitions announce the checkpoints)"
        )
    overlap = _overlaps(routes)
    if overlap:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}': {sorted(k.value for k in overlap)} appear in more than one route; "
            "route each event kind to one target (one selection can hold several assets)"
        )
    options = options or PollingOptions()
    targets = tuple(resolve_route(name, i, route) for i, route in enumerate(routes))
    names = [t.job_name for t in targets]
    if len(set(names)) != len(names):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}': two routes run the same job {names}; merge them into one route"
        )
    kinds = frozenset().union(announced, *(route.kinds for route in routes))
    plan = SensorPlan(
        name=name,
        resource_key=resource_key,
        session_filter=session_filter or SessionFilter(),
        options=options,
        config=options.tracker_config(kinds),
        budget=_tick_budget(options.tick_budget_seconds),
        targets=targets,
        checkpoint_asset_key=checkpoint_asset_key,
        name_jobs=len(targets) > 1,
        announce=announced,
    )

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        return _evaluate_tick(context, plan)

    return QuietSensorDefinition(
        rl_fn=evaluate,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=description or _describe(kinds, targets, checkpoint_asset_key),
    )


def _describe(
    kinds: frozenset[EventKind], targets: Sequence[RouteTarget], asset_key: dg.AssetKey | None
) -> str:
    named = ", ".join(sorted(k.value for k in kinds))
    if targets:
        return f"Together RL events ({named}) → runs."
    shown = asset_key.to_user_string() if asset_key else "the checkpoint asset"
    return (
        f"Together RL checkpoints ({named}) → partitions and runless materializations of {shown}."
    )


def _is_job(target: object) -> bool:
    return isinstance(target, dg.JobDefinition | dg.GraphDefinition | UnresolvedAssetJobDefinition)


def merge_polling(
    options: PollingOptions | None, polling: PollingKwargs, *, stacklevel: int = 3
) -> PollingOptions:
    """``options`` with the 0.1.0 loose knobs applied (with a DeprecationWarning that points at
    the caller ``stacklevel`` frames up)."""
    if not polling:
        return options or PollingOptions()
    warnings.warn(
        f"passing {sorted(polling)} as keyword arguments is deprecated; pass "
        "options=PollingOptions(...) instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    base = options or PollingOptions()
    return PollingOptions(**{**base.__dict__, **polling})


def build_rl_event_sensor(
    *,
    name: str,
    event_kinds: Iterable[EventKind | str],
    job: "ExecutableDefinition | None" = None,
    target: "CoercibleToAssetSelection | ExecutableDefinition | None" = None,
    resource_key: str = "together",
    session_filter: SessionFilter | None = None,
    partitions_def: dg.DynamicPartitionsDefinition | None = None,
    checkpoint_asset_key: dg.AssetKey | None = None,
    run_request_fn: RunRequestFn | None = None,
    options: PollingOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
    **polling: Unpack[PollingKwargs],
) -> dg.SensorDefinition:
    """A sensor that requests one run per wanted session event, on one target.

    ``job`` (a job) or ``target`` (a job or an asset selection) says what the runs execute;
    ``partitions_def`` makes checkpoint runs partitioned (the target must be partitioned by
    it; checked at load). Other arguments as for :func:`build_routed_sensor`.
    """
    if (job is None) == (target is None):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' takes exactly one of job= and target="
        )
    chosen = job if job is not None else target
    route = EventRoute(
        event_kinds=parse_event_kinds(event_kinds),
        job=chosen if _is_job(chosen) else None,  # type: ignore[arg-type]
        assets=None if _is_job(chosen) else chosen,  # type: ignore[arg-type]
        job_name=None if _is_job(chosen) else f"{name}_assets",
        partitions_def=partitions_def,
        run_request_fn=run_request_fn,
    )
    return build_routed_sensor(
        name=name,
        routes=[route],
        resource_key=resource_key,
        session_filter=session_filter,
        checkpoint_asset_key=checkpoint_asset_key,
        options=merge_polling(options, polling),
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description,
    )
