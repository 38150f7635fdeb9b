"""The model-resource family's tick body: list the resources, record billed spans on status
changes, run the pure tracker (``advance_resources``), turn its events into run requests.

Loaded by the model-resource sensor on its first tick (not with the definitions): it is what
brings in the tracker and the API's models.
"""

from collections.abc import Callable

import dagster as dg

from ..core.resources import (
    ResourceObservation,
    ResourceTrackerState,
    advance_resources,
    status_changes,
)
from .resource_sensor import ResourcePlan, default_resource_run_request
from .spend_spans import record_spans
from .tick import SensorFamily, Tick, TickOutcome

#: The model-resource tracker as a sensor family of the tick skeleton.
RESOURCES = SensorFamily(ResourceTrackerState.from_cursor, ResourceTrackerState)

ResourceBody = Callable[[Tick, ResourceTrackerState], TickOutcome[ResourceTrackerState]]


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
