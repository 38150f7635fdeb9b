"""The model-resource sensor: one run per resource event (READY, ERROR, STOPPED, expiring soon,
queued too long), exactly once, with the session sensors' tick discipline.

Each tick lists every model resource (few per account) within the tick budget, runs the pure
tracker (``core/resources.py``) and returns a ``SensorResult``. A transient API failure ends
the tick with a SkipReason and the cursor untouched, so the next tick retries.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ..api.models import ModelResource
from ..core.resource_events import ALL_RESOURCE_EVENT_KINDS, ResourceEvent, ResourceEventKind
from ..core.resource_tracker import (
    ResourceObservation,
    ResourceTrackerConfig,
    ResourceTrackerState,
    advance_resources,
    status_changes,
)
from .definition import QuietSensorDefinition
from .options import ResourceSensorOptions, parse_kinds
from .run_requests import TAG_PREFIX
from .spend_spans import record_spans
from .tick import SensorFamily, Tick, TickOutcome, run_tick, tick_budget

#: The model-resource tracker as a sensor family of the tick skeleton.
RESOURCES = SensorFamily(ResourceTrackerState.from_cursor, ResourceTrackerState)

#: Reshape the default RunRequest of a resource event, or drop it (return None).
ResourceRunRequestFn = Callable[[ResourceEvent, dg.RunRequest], dg.RunRequest | None]

_MAX_TAG = 200


def _tag(value: object) -> str:
    text = str(value)
    return text if len(text) <= _MAX_TAG else text[: _MAX_TAG - 1] + "…"


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
        else _tag(r.raw_status),
    }
    if r.base_model:
        tags[f"{TAG_PREFIX}base_model"] = _tag(r.base_model)
    if event.previous_status:
        tags[f"{TAG_PREFIX}previous_status"] = _tag(event.previous_status)
    if event.error_code:
        tags[f"{TAG_PREFIX}error_code"] = _tag(event.error_code)
    if event.error_message:
        tags[f"{TAG_PREFIX}error_message"] = _tag(event.error_message)
    if event.queue_position is not None:
        tags[f"{TAG_PREFIX}queue_position"] = str(event.queue_position)
    if event.queued_ms is not None:
        tags[f"{TAG_PREFIX}queued_seconds"] = str(event.queued_ms // 1000)
    if event.expires_at_ms is not None and r.expires_at is not None:
        tags[f"{TAG_PREFIX}expires_at"] = r.expires_at.isoformat()
    return tags


@dataclass(frozen=True)
class ResourceRoute:
    """Which model-resource event kinds go to which target: a job, or an asset selection run as
    an asset job named ``job_name``. Exactly one of ``job`` and ``assets``; each kind goes to
    one route of a sensor."""

    event_kinds: Iterable[ResourceEventKind | str]
    job: Any = None
    assets: Any = None
    job_name: str | None = None
    #: The parsed ``event_kinds`` (which is normalised to the same set when built).
    kinds: frozenset[ResourceEventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.job is None) == (self.assets is None):
            raise dg.DagsterInvalidDefinitionError(
                "a ResourceRoute takes exactly one of job, assets"
            )
        object.__setattr__(self, "kinds", resource_event_kinds(self.event_kinds))
        object.__setattr__(self, "event_kinds", self.kinds)

    def target(self, sensor: str, index: int) -> Any:
        if self.job is not None:
            return self.job
        return dg.define_asset_job(
            self.job_name or f"{sensor}_route_{index}", selection=self.assets
        )


def resource_event_kinds(kinds: Iterable[ResourceEventKind | str]) -> frozenset[ResourceEventKind]:
    """Parse model-resource event kinds (see :func:`~.options.parse_kinds`)."""
    return parse_kinds(ResourceEventKind, kinds, noun="model-resource event kind")


def _route_jobs(
    sensor: str, routes: Iterable[ResourceRoute]
) -> tuple[frozenset[ResourceEventKind], list[Any], dict[ResourceEventKind, str]]:
    """The kinds the routes take, their jobs, and each kind's job name (a kind in two routes
    is an error: its runs would have two targets)."""
    jobs: list[Any] = []
    job_of: dict[ResourceEventKind, str] = {}
    for i, route in enumerate(routes):
        job = route.target(sensor, i)
        jobs.append(job)
        for kind in route.kinds:
            if kind in job_of:
                raise dg.DagsterInvalidDefinitionError(
                    f"sensor '{sensor}': event kind {kind.value!r} is in two routes"
                )
            job_of[kind] = job.name
    if not jobs:
        raise dg.DagsterInvalidDefinitionError(f"sensor '{sensor}': routes is empty")
    return frozenset(job_of), jobs, job_of


def default_resource_run_request(
    event: ResourceEvent, job_name: str | None = None
) -> dg.RunRequest:
    """``run_key`` is the event key: Dagster dedupes a replayed tick."""
    return dg.RunRequest(run_key=event.key, tags=resource_event_tags(event), job_name=job_name)


def build_model_resource_sensor(
    *,
    name: str = "together_rl_model_resource_sensor",
    job: Any = None,
    target: Any = None,
    event_kinds: Iterable[ResourceEventKind | str] = tuple(ALL_RESOURCE_EVENT_KINDS),
    routes: Iterable[ResourceRoute] | None = None,
    resource_key: str = "together",
    resource_filter: ResourceFilter | None = None,
    run_request_fn: ResourceRunRequestFn | None = None,
    options: ResourceSensorOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
    spend_db_path: str | None = None,
) -> dg.SensorDefinition:
    """A sensor that requests one run per wanted model-resource event, and records each
    resource's billed span (READY until it leaves READY) whenever its status changes, so the
    spend asset prices what it never saw (the end of READY has no event of its own).

    Args:
        job / target: where every run goes; or
        routes: each event kind to its own job or asset selection (one poll of the API for
            all; then ``event_kinds`` is the routes' kinds and ``job``/``target`` are not given).
        event_kinds: which :class:`ResourceEventKind` become runs (default: all five).
        resource_filter: which resources (creator, base model, predicate).
        run_request_fn: reshape each RunRequest (run config, tags) or drop it.
        options: thresholds and tick knobs (:class:`ResourceSensorOptions`).
        spend_db_path: where the spend asset keeps its tables, when not where the resource's
            ``database_url`` puts every table (the default).
    """
    options = options or ResourceSensorOptions()
    job_of: dict[ResourceEventKind, str] = {}
    jobs: list[Any] | None = None
    if routes is not None:
        if job is not None or target is not None:
            raise dg.DagsterInvalidDefinitionError("give routes, or job/target, not both")
        kinds, jobs, job_of = _route_jobs(name, routes)
    else:
        kinds = resource_event_kinds(event_kinds)
    config = ResourceTrackerConfig(
        kinds=kinds,
        max_events=options.max_runs_per_tick,
        expiring_lead_ms=int(options.expiring_lead_seconds * 1000),
        queued_long_ms=int(options.queued_long_seconds * 1000),
        lookback_ms=int(options.lookback_seconds * 1000),
    )
    flt = resource_filter or ResourceFilter()
    budget = tick_budget(options.tick_budget_seconds)

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
                resource = getattr(tick.context.resources, resource_key)
                changed = record_spans(
                    resource, tick.context.instance, spend_db_path, moved, now_ms=obs.clock_ms
                )
                spans = f"; {len(changed)} billed span(s) updated" if changed else ""
            except Exception as exc:  # spend is a side record: never block the events
                tick.context.log.warning(f"could not record billed spans: {exc}")
        outcome = advance_resources(state, obs, config)
        for note in outcome.notes:
            tick.context.log.warning(note)
        requests: list[dg.RunRequest] = []
        for event in outcome.events:
            default = default_resource_run_request(event, job_of.get(event.kind))
            request = default if run_request_fn is None else run_request_fn(event, default)
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

    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        return run_tick(
            context,
            RESOURCES,
            body,
            resource_key=resource_key,
            budget=budget,
            alarm_after_s=options.unavailable_alarm_seconds,
        )

    # One of target / jobs only: Dagster's copies (with_attributes) pass ``jobs`` back.
    where: dict[str, Any] = {"target": target} if target is not None else {}
    if jobs is not None or job is not None:
        where = {"jobs": jobs if jobs is not None else [job]}
    return QuietSensorDefinition(
        rl_fn=_sensor,
        name=name,
        **where,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=description
        or f"Together RL model-resource events ({', '.join(sorted(k.value for k in kinds))}).",
    )
