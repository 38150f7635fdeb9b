"""Session-event sensors: each tick reads the API within a time budget, runs the pure event core,
and returns a ``SensorResult`` with one RunRequest per wanted event.

:func:`build_routed_sensor` is the general form: one poll of the API per interval, each event
kind routed to a job or an asset selection (:class:`EventRoute`), so checkpoint evaluation
and session reports share one poll. :func:`build_rl_event_sensor` is the single-target form;
the presets in :mod:`.presets` are its usual wiring. Each sensor keeps its own cursor.

The resource is a sensor requirement resolved by Dagster at tick time, never a closed-over
object: an unresolved ``EnvVar`` would otherwise be sent as the key itself (the bug of
dagster-fivetran's polling sensor).

The tick is the shared skeleton (:mod:`.tick`: budget, clock, transient failures, outage alarm,
cursor recovery, one log line) around this family's body, in :mod:`.session_tick`: ``collect``
→ ``advance`` → run requests. This module only builds and checks definitions; the tick body,
and with it the tracker and the API's models, loads with the first tick, so a code server
loading definitions pays for neither.
"""

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from ..core.events import CHECKPOINT_EVENTS, EventKind
from ..core.filters import SessionFilter
from .options import EventRoute, PollingOptions
from .options import event_kinds as parse_event_kinds
from .quiet_sensor import QuietSensorDefinition
from .targets import RouteTarget, is_job, resolve_routes
from .tick import run_tick, tick_budget

if TYPE_CHECKING:
    from dagster._core.definitions.asset_selection import CoercibleToAssetSelection
    from dagster._core.definitions.target import ExecutableDefinition

    from ..core.observation import TrackerConfig


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
    def config(self) -> "TrackerConfig":
        """The tracker's policy, built on the first tick (with the tracker, not the definitions)."""
        return self.options.tracker_config(self.kinds)

    def target_for(self, kind: EventKind) -> RouteTarget[EventRoute] | None:
        for target in self.targets:
            if kind in target.route.kinds:
                return target
        return None


def build_routed_sensor(
    *,
    name: str,
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
        name: the sensor's name (also the key of its cursor; rename = start over).
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
        from .session_tick import SESSIONS, session_tick  # the tracker loads with the first tick

        return run_tick(
            context,
            SESSIONS,
            session_tick(plan),
            resource_key=plan.resource_key,
            budget=plan.budget,
            alarm_after_s=plan.options.unavailable_alarm_seconds,
        )

    return QuietSensorDefinition(
        rl_fn=evaluate,
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


def single_route(
    sensor: str,
    kinds: Iterable[EventKind | str],
    job: "ExecutableDefinition | None",
    target: "CoercibleToAssetSelection | ExecutableDefinition | None",
    partitions_def: dg.DynamicPartitionsDefinition | None,
) -> EventRoute:
    """The one route of a single-target sensor: ``job`` (a job) or ``target`` (a job or an
    asset selection, run as the asset job ``<sensor>_assets``), as ``@dg.sensor`` takes them."""
    if (job is None) == (target is None):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{sensor}' takes exactly one of job= and target="
        )
    chosen = job if job is not None else target
    if is_job(chosen):
        return EventRoute(kinds, job=chosen, partitions_def=partitions_def)
    return EventRoute(
        kinds,
        assets=chosen,
        job_name=f"{sensor}_assets",
        partitions_def=partitions_def,
    )


def build_rl_event_sensor(
    *,
    name: str,
    event_kinds: Iterable[EventKind | str],
    job: "ExecutableDefinition | None" = None,
    target: "CoercibleToAssetSelection | ExecutableDefinition | None" = None,
    session_filter: SessionFilter | None = None,
    options: PollingOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """A sensor that requests one (unpartitioned) run per wanted session event, on one target.

    ``job`` (a job) or ``target`` (a job or an asset selection) says what the runs execute.
    For checkpoint runs partitioned by checkpoint use :func:`~.presets.build_checkpoint_sensor`;
    for a ``run_request_fn`` or several targets, :func:`build_routed_sensor` with
    :class:`EventRoute`. Other arguments as for :func:`build_routed_sensor`.
    """
    return build_routed_sensor(
        name=name,
        routes=[single_route(name, event_kinds, job, target, None)],
        session_filter=session_filter,
        options=options,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description,
    )
