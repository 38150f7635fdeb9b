"""The model-resource sensor: one run per resource event (READY, ERROR, STOPPED, expiring soon,
queued too long), exactly once, with the session sensors' tick discipline.

Each tick lists every model resource (few per account) within the tick budget, runs the pure
tracker (``core/resource_tracker.py``) and returns a ``SensorResult``. A transient API failure
ends the tick with a SkipReason and the cursor untouched, so the next tick retries.
"""

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dagster as dg

from ..api.models import ModelResource
from ..core.events import ResourceEvent, ResourceEventKind
from ..core.resources import (
    ResourceObservation,
    ResourceTrackerConfig,
    ResourceTrackerState,
    advance_resources,
    status_changes,
)
from .options import ResourceRoute, ResourceSensorOptions
from .run_requests import TAG_PREFIX, tag_value
from .spend_spans import record_spans
from .targets import RouteTarget, resolve_routes
from .tick import SensorFamily, Tick, TickOutcome, run_tick, tick_budget

#: The model-resource tracker as a sensor family of the tick skeleton.
RESOURCES = SensorFamily(ResourceTrackerState.from_cursor, ResourceTrackerState)

ResourceBody = Callable[[Tick, ResourceTrackerState], TickOutcome[ResourceTrackerState]]


@dataclass(frozen=True)
class ResourceFilter:
    """Which model resources a sensor watches; every given field must match.

    ``created_by`` ("me" or a user id) is sent to the API; ``base_model`` and ``predicate``
    are checked on each resource read.
    """

    created_by: str | None = None
    base_model: str | None = None
    predicate: Callable[[ModelResource], bool] | None = None

    def matches(self, resource: ModelResource) -> bool:
        if self.base_model is not None and resource.base_model != self.base_model:
            return False
        return self.predicate is None or bool(self.predicate(resource))


def resource_event_tags(event: ResourceEvent) -> dict[str, str]:
    """``together/*`` tags: event, resource id and status, base model, and the event's detail
    (error code/message, queue position, expiry deadline)."""
    r = event.resource
    status = r.status
    tags = {
        f"{TAG_PREFIX}event": event.kind.value,
        f"{TAG_PREFIX}model_resources_id": r.id,
        f"{TAG_PREFIX}resource_status": status.short
        if status.name != "UNKNOWN"
        else tag_value(r.raw_status),
    }
    if r.base_model:
        tags[f"{TAG_PREFIX}base_model"] = tag_value(r.base_model)
    if event.previous_status:
        tags[f"{TAG_PREFIX}previous_status"] = tag_value(event.previous_status)
    if event.error_code:
        tags[f"{TAG_PREFIX}error_code"] = tag_value(event.error_code)
    if event.error_message:
        tags[f"{TAG_PREFIX}error_message"] = tag_value(event.error_message)
    if event.queue_position is not None:
        tags[f"{TAG_PREFIX}queue_position"] = str(event.queue_position)
    if event.queued_ms is not None:
        tags[f"{TAG_PREFIX}queued_seconds"] = str(event.queued_ms // 1000)
    if event.expires_at_ms is not None and r.expires_at is not None:
        tags[f"{TAG_PREFIX}expires_at"] = r.expires_at.isoformat()
    return tags


def default_resource_run_request(
    event: ResourceEvent, job_name: str | None = None
) -> dg.RunRequest:
    """``run_key`` is the event key: Dagster dedupes a replayed tick."""
    return dg.RunRequest(run_key=event.key, tags=resource_event_tags(event), job_name=job_name)


@dataclass(frozen=True)
class ResourcePlan:
    """Everything a model-resource tick needs, fixed when the sensor is defined."""

    name: str
    options: ResourceSensorOptions
    resource_filter: ResourceFilter
    route_of: dict[ResourceEventKind, RouteTarget[ResourceRoute]]
    name_jobs: bool  # several targets: each RunRequest names its job
    budget: float

    @functools.cached_property
    def config(self) -> ResourceTrackerConfig:
        """The tracker's policy."""
        return self.options.tracker_config(frozenset(self.route_of))


def build_model_resource_sensor(
    *,
    name: str = "together_rl_model_resource_sensor",
    routes: Sequence[ResourceRoute],
    resource_filter: ResourceFilter | None = None,
    options: ResourceSensorOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """A sensor that requests one run per wanted model-resource event, and records each
    resource's billed span (READY until it leaves READY) whenever its status changes, so the
    spend asset prices what it never saw (the end of READY has no event of its own).

    Args:
        name: the sensor's name (also the key of its cursor).
        routes: each event kind to its own job or asset selection (:class:`ResourceRoute`,
            resolved as :class:`EventRoute` is); one poll of the API for all.
        resource_filter: which resources (creator, base model, predicate).
        options: the resource key, thresholds, spend tables and tick knobs
            (:class:`ResourceSensorOptions`).
        minimum_interval_seconds, default_status, description: as for ``@dg.sensor``.
    """
    options = options or ResourceSensorOptions()
    if not routes:
        raise dg.DagsterInvalidDefinitionError(f"sensor '{name}': routes is empty")
    targets = resolve_routes(name, routes)
    plan = ResourcePlan(
        name=name,
        options=options,
        resource_filter=resource_filter or ResourceFilter(),
        route_of={kind: t for t in targets for kind in t.route.kinds},
        name_jobs=len(targets) > 1,
        budget=tick_budget(options.tick_budget_seconds),
    )

    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        return run_tick(
            context,
            RESOURCES,
            resource_tick(plan),
            resource_key=options.resource_key,
            budget=plan.budget,
            alarm_after_s=options.unavailable_alarm_seconds,
        )

    return dg.SensorDefinition(
        evaluation_fn=_sensor,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={options.resource_key},
        description=description
        or f"Together RL model-resource events ({', '.join(sorted(k.value for k in plan.route_of))}).",
    )


def resource_tick(plan: ResourcePlan) -> ResourceBody:
    """The body of one tick of the sensor ``plan`` describes."""
    options = plan.options
    flt = plan.resource_filter

    def body(tick: Tick, state: ResourceTrackerState) -> TickOutcome[ResourceTrackerState]:
        listed = [
            r
            for r in tick.client.list_model_resources(
                created_by=flt.created_by, deadline=tick.deadline
            )
            if flt.matches(r)
        ]
        obs = ResourceObservation(
            now_ms=tick.now_ms, resources=listed, server_now_ms=tick.clock.last_ms
        )
        spans = ""
        if moved := status_changes(state, listed):
            try:
                resource = getattr(tick.context.resources, options.resource_key)
                changed = record_spans(
                    resource, tick.context.instance, options.spend_db_path, moved,
                    now_ms=obs.clock_ms,
                )  # fmt: skip
                spans = f"; {len(changed)} billed span(s) updated" if changed else ""
            except Exception as exc:  # spend is a side record: never block the events
                tick.context.log.warning(f"could not record billed spans: {exc}")
        outcome = advance_resources(state, obs, plan.config)
        for note in outcome.notes:
            tick.context.log.warning(note)
        requests: list[dg.RunRequest] = []
        for event in outcome.events:
            target = plan.route_of[event.kind]
            default = default_resource_run_request(
                event, target.job_name if plan.name_jobs else None
            )
            fn = target.route.run_request_fn
            request = default if fn is None else fn(event, default)
            if request is not None:
                requests.append(request)
        summary = (
            f"{len(requests)} run(s) from {len(outcome.events)} event(s); "
            f"{len(listed)} resource(s) listed; tracking {len(outcome.state.tracked)}{spans}"
        )
        if outcome.deferred:
            summary += (
                f"; more events than max_runs_per_tick={options.max_runs_per_tick}, rest next tick"
            )
        return TickOutcome(outcome.state, summary, requests)

    return body
