"""The session-event sensor: each tick reads the API within a time budget, runs the pure event
core, and returns a ``SensorResult`` with one RunRequest per wanted event.

:func:`build_session_sensor` polls the API once per interval and routes each event kind to a
job or an asset selection (:class:`EventRoute`), so checkpoint evaluation and session reports
share one poll and one cursor.

The resource is a sensor requirement resolved by Dagster at tick time, never a closed-over
object: an unresolved ``EnvVar`` would otherwise be sent as the key itself (the bug of
dagster-fivetran's polling sensor).

The tick is the shared skeleton (:mod:`.tick`: budget, clock, transient failures, outage alarm,
cursor recovery, one log line) around this family's body, :func:`session_tick`: ``collect``
→ ``advance`` → run requests.
"""

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dagster as dg

from ..core import SessionEvent, TrackerState, advance
from ..core.events import CHECKPOINT_EVENTS, EventKind, SessionFilter, TrackerConfig
from ..core.reading import collect
from ..partitions import CHECKPOINT_PARTITIONS
from .client_source import ClientSessionSource
from .options import EventRoute, PollingOptions
from .options import event_kinds as parse_event_kinds
from .run_requests import checkpoint_materialization, default_run_request
from .targets import RouteTarget, check_at_tick, resolve_routes
from .tick import TRANSIENT_ERRORS, SensorFamily, Tick, TickOutcome, run_tick, tick_budget

#: pages of the unfiltered session list a tick may read for discovery (after the first tick).
DISCOVERY_PAGES_PER_TICK = 50

#: The session tracker as a sensor family of the tick skeleton.
SESSIONS = SensorFamily(TrackerState.from_cursor, TrackerState)


@dataclass(frozen=True)
class SensorPlan:
    """Everything a tick needs, fixed when the sensor is defined."""

    name: str
    resource_key: str
    session_filter: SessionFilter
    options: PollingOptions
    kinds: frozenset[EventKind]  # every kind tracked: routed or announced
    budget: float
    targets: tuple[RouteTarget[EventRoute], ...]
    checkpoint_asset_key: dg.AssetKey | None
    name_jobs: bool  # several targets: each RunRequest names its job
    announce: frozenset[EventKind] = frozenset()  # checkpoint kinds announced with no route

    @functools.cached_property
    def config(self) -> TrackerConfig:
        """The tracker's policy."""
        return self.options.tracker_config(self.kinds)

    def target_for(self, kind: EventKind) -> RouteTarget[EventRoute] | None:
        for target in self.targets:
            if kind in target.route.kinds:
                return target
        return None


def build_session_sensor(
    *,
    name: str = "together_rl_events",
    routes: Sequence[EventRoute],
    session_filter: SessionFilter | None = None,
    options: PollingOptions | None = None,
    announce: Iterable[EventKind | str] = (),
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """One sensor, one poll of the API per tick, each event kind routed to its own target.

    Args:
        name: the sensor's name (also the key of its cursor; rename = start over). The
            default is the Component's, so both spellings of one sensor share its cursor.
        routes: which event kinds go where; each kind to at most one route. Kinds in no
            route are only tracked.
        session_filter: which sessions to watch (model resource, creator, name glob, W&B).
        options: the resource key, the checkpoint asset recorded per checkpoint event and
            the polling knobs (:class:`PollingOptions`).
        announce: checkpoint kinds (``checkpoint_registered``, ``checkpoint_created``) whose
            partition is added and runless materialization recorded even when no route runs
            them. With ``routes=[]`` the sensor only announces: assets downstream of the
            checkpoint asset follow with ``AutomationCondition.eager()``.
        minimum_interval_seconds, default_status, description: as for ``@dg.sensor``.

    Raises:
        DagsterInvalidDefinitionError: no routes and nothing announced, a kind in two routes,
            announce without a checkpoint asset or with a session kind, or a checkpoint route
            whose target is not partitioned by its ``partitions_def`` (``CHECKPOINT_PARTITIONS``).
    """
    options = options or PollingOptions()
    announced = parse_event_kinds(announce) if announce else frozenset()
    if not routes and not announced:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' needs at least one EventRoute, or checkpoint kinds to announce"
        )
    asset_key = options.checkpoint_asset_key
    if announced and (asset_key is None or not announced <= CHECKPOINT_EVENTS):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}': announce takes checkpoint kinds "
            f"({', '.join(sorted(k.value for k in CHECKPOINT_EVENTS))}) and needs "
            "options.checkpoint_asset_key (the asset whose partitions announce the checkpoints)"
        )
    targets = resolve_routes(name, routes)
    kinds = frozenset().union(announced, *(route.kinds for route in routes))
    plan = SensorPlan(
        name=name,
        resource_key=options.resource_key,
        session_filter=session_filter or SessionFilter(),
        options=options,
        kinds=kinds,
        budget=tick_budget(options.tick_budget_seconds),
        targets=targets,
        checkpoint_asset_key=asset_key,
        name_jobs=len(targets) > 1,
        announce=announced,
    )

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        return run_tick(
            context,
            SESSIONS,
            session_tick(plan),
            resource_key=plan.resource_key,
            budget=plan.budget,
            alarm_after_s=plan.options.unavailable_alarm_seconds,
        )

    return dg.SensorDefinition(
        evaluation_fn=evaluate,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={plan.resource_key},
        description=description or _describe(kinds, targets, asset_key),
    )


def _describe(
    kinds: frozenset[EventKind],
    targets: Sequence[RouteTarget[EventRoute]],
    asset_key: dg.AssetKey | None,
) -> str:
    named = ", ".join(sorted(k.value for k in kinds))
    if targets:
        return f"Together RL events ({named}) → runs."
    shown = asset_key.to_user_string() if asset_key else "the checkpoint asset"
    return (
        f"Together RL checkpoints ({named}) → partitions and runless materializations of {shown}."
    )


def session_tick(plan: SensorPlan) -> Callable[[Tick, TrackerState], TickOutcome[TrackerState]]:
    """The session family's tick body: collect → advance → run requests."""

    def body(tick: Tick, state: TrackerState) -> TickOutcome[TrackerState]:
        context = tick.context
        check_at_tick(context, plan.name, list(plan.targets))
        source = ClientSessionSource(
            tick.client,
            plan.session_filter,
            deadline=tick.deadline,
            page_size=plan.options.page_size,
            server_clock=tick.clock,
        )
        reserve = min(5.0, plan.budget / 4)
        collected = collect(
            state,
            plan.config,
            source,
            now_ms=tick.now_ms,
            out_of_time=lambda: tick.out_of_time(reserve),
            transient=TRANSIENT_ERRORS,
            discovery_pages_per_tick=DISCOVERY_PAGES_PER_TICK,
        )
        for item in source.skipped:
            context.log.warning(
                f"skipped an unreadable item of the API's lists (id {item.id or 'unreadable'}, "
                f"field {item.field or '(the item)'}: {item.reason}); it is read again when "
                "it is listed again"
            )
        for sid in collected.unreadable:
            context.log.warning(f"session {sid} could not be read; it is fetched again next tick")
        outcome = advance(state, collected.observation, plan.config)
        for note in outcome.notes:
            context.log.warning(note)
        built = _build_requests(outcome.events, plan)
        summary = (
            f"{len(built.run_requests)} run(s) from {len(outcome.events)} event(s); "
            f"tracking {len(outcome.state.tracked)} session(s)"
        )
        if outcome.deferred:
            summary += (
                f"; more events than max_runs_per_tick={plan.options.max_runs_per_tick}, "
                "rest next tick"
            )
        if collected.interrupted:
            summary += f"; read stopped early ({collected.interrupted}), rest next tick"
        unreadable = len(source.skipped) + len(collected.unreadable)
        if unreadable:
            summary += f"; {unreadable} unreadable item(s) skipped (retried when read again)"
        return TickOutcome(
            outcome.state,
            summary,
            built.run_requests,
            built.partition_requests(),
            built.asset_events,
            requests=collected.requests,
        )

    return body


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
