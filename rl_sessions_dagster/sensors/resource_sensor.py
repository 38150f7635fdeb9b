"""The model-resource sensor: one run per resource event (READY, ERROR, STOPPED, expiring soon,
queued too long), exactly once, with the session sensors' tick discipline.

Each tick lists every model resource (few per account) within the tick budget, runs the pure
tracker (``core/resource_tracker.py``) and returns a ``SensorResult``. A transient API failure
ends the tick with a SkipReason and the cursor untouched, so the next tick retries. This module
builds and checks the definition; the tick body (:mod:`.resource_tick`), with the tracker and
the API's models, loads with the first tick.
"""

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from ..core.events import ResourceEvent, ResourceEventKind
from .options import ResourceRoute, ResourceSensorOptions
from .quiet_sensor import QuietSensorDefinition
from .run_requests import TAG_PREFIX
from .targets import RouteTarget, resolve_routes
from .tick import run_tick, tick_budget

if TYPE_CHECKING:
    from ..api.models import ModelResource
    from ..core.resources import ResourceTrackerConfig

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
    predicate: "Callable[[ModelResource], bool] | None" = None

    def matches(self, resource: "ModelResource") -> bool:
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
    def config(self) -> "ResourceTrackerConfig":
        """The tracker's policy, built on the first tick (with the tracker, not the definitions)."""
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
        from .resource_tick import RESOURCES, resource_tick  # the tracker loads with a tick

        return run_tick(
            context,
            RESOURCES,
            resource_tick(plan),
            resource_key=options.resource_key,
            budget=plan.budget,
            alarm_after_s=options.unavailable_alarm_seconds,
        )

    return QuietSensorDefinition(
        rl_fn=_sensor,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={options.resource_key},
        description=description
        or f"Together RL model-resource events ({', '.join(sorted(k.value for k in plan.route_of))}).",
    )
