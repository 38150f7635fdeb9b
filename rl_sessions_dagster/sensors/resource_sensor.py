"""The model-resource sensor: one run per resource event, exactly once; each tick lists every
resource (few per account) into the tracker (``core/resources.py``)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dagster as dg

from ..api.models import ModelResource
from ..core.resources import (
    ResourceObservation,
    ResourceTrackerState,
    advance_resources,
    status_changes,
)
from ..core.spend import observe_spans
from ..resource import open_table_store
from .options import ResourceRoute, ResourceSensorOptions
from .tick import RoutedRuns, Tick, TickOutcome, resolve_routes, run_tags, status_tag, tick_sensor


@dataclass(frozen=True)
class ResourceFilter:
    """``created_by`` ("me" or a user id) is sent to the API; the rest checked on each read."""

    created_by: str | None = None
    base_model: str | None = None
    predicate: Callable[[ModelResource], bool] | None = None

    def matches(self, resource: ModelResource) -> bool:
        if self.base_model is not None and resource.base_model != self.base_model:
            return False
        return self.predicate is None or bool(self.predicate(resource))


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
    """Each status change also records the billed span on the API's clock, so the spend asset
    prices spans it never saw begin or end (leaving READY has no event)."""
    options = options or ResourceSensorOptions()
    if not routes:
        raise dg.DagsterInvalidDefinitionError(f"sensor '{name}': routes is empty")
    targets = resolve_routes(name, routes)
    route_of = {kind: t for t in targets for kind in t.route.kinds}
    flt = resource_filter or ResourceFilter()
    config = options.tracker_config(frozenset(route_of))

    def body(tick: Tick, state: ResourceTrackerState) -> TickOutcome[ResourceTrackerState]:
        rows = tick.client.list_model_resources(created_by=flt.created_by, deadline=tick.deadline)
        listed = [r for r in rows if flt.matches(r)]
        obs = ResourceObservation(tick.now_ms, listed, server_now_ms=tick.clock.last_ms)
        spans = ""
        if moved := status_changes(state, listed):
            try:
                resource = getattr(tick.context.resources, options.resource_key)
                db, instance = options.spend_db_path, tick.context.instance
                with open_table_store(resource, instance, db, url_setting="spend_db_path") as store:
                    changed = observe_spans(store.load_spans(), moved, now_ms=obs.clock_ms)
                    if changed:
                        store.save_spans(changed, now_ms=obs.clock_ms)
                spans = f"; {len(changed)} billed span(s) updated" if changed else ""
            except Exception as exc:  # spend is a side record: never block the events
                tick.context.log.warning(f"could not record billed spans: {exc}")
        outcome = advance_resources(state, obs, config)
        for note in outcome.notes:
            tick.context.log.warning(note)
        runs = RoutedRuns(targets)
        for event in outcome.events:
            r = event.resource
            tags = run_tags(
                event=event.kind.value,
                model_resources_id=r.id,
                resource_status=status_tag(r.status, r.raw_status),
                base_model=r.base_model,
                previous_status=event.previous_status,
                error_code=event.error_code,
                error_message=event.error_message,
                queue_position=event.queue_position,
                queued_seconds=event.queued_ms // 1000 if event.queued_ms is not None else None,
                expires_at=r.expires_at.isoformat()
                if event.expires_at_ms is not None and r.expires_at
                else None,
            )
            runs.add(route_of[event.kind], event, tags)
        tracking = f"{len(listed)} resource(s) listed; tracking {len(outcome.state.tracked)}{spans}"
        summary = runs.summary(outcome, tracking, options.max_runs_per_tick)
        return TickOutcome(outcome.state, summary, runs.requests)

    return tick_sensor(
        ResourceTrackerState,
        body,
        options,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description
        or f"Together RL model-resource events ({', '.join(sorted(k.value for k in route_of))}).",
    )
