"""Where a route's runs go, checked at definitions load (Dagster would fail only at the first
checkpoint) or at the first tick for a user's asset job, and each event's RunRequest and tags.
"""

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import AbstractSet, Any, Generic, TypeVar  # noqa: UP035 - AssetSelection's own type

import dagster as dg

from ..core.events import SessionEvent
from ..partitions import Job, checkpoint_metadata, checkpoint_partition_key
from .options import EventRoute, ResourceRoute

#: A route of either family: both are resolved here, by the same code.
R = TypeVar("R", EventRoute, ResourceRoute)

TAG_PREFIX = "together/"
_MAX_TAG_VALUE = 200


def tag_value(value: object) -> str:
    """``value`` cut to Dagster's tag length limit."""
    text = str(value)
    return text if len(text) <= _MAX_TAG_VALUE else text[: _MAX_TAG_VALUE - 1] + "…"


def run_tags(**values: object) -> dict[str, str]:
    """``together/<name>`` tags of the values given, leaving out None and empty ones."""
    return {
        f"{TAG_PREFIX}{name}": tag_value(value)
        for name, value in values.items()
        if value is not None and value != ""
    }


def status_tag(status: Any, raw: str | None) -> str:
    """The status's short name; the raw one when this library does not know it."""
    return status.short if status.name != "UNKNOWN" else tag_value(raw)


def event_tags(event: SessionEvent) -> dict[str, str]:
    session, checkpoint = event.session, event.checkpoint
    return run_tags(
        event=event.kind.value,
        session_id=session.id,
        session_status=status_tag(session.status, session.raw_status),
        checkpoint_id=checkpoint.id if checkpoint is not None else None,
        step=checkpoint.step if checkpoint is not None else session.step,
        base_model=session.base_model,
        display_name=session.display_name,
        previous_status=event.previous_status,
    )


def default_run_request(event: SessionEvent, *, partitioned: bool) -> dg.RunRequest:
    """``run_key`` is the event's key, unique per fact: Dagster dedupes a replayed tick."""
    checkpoint = event.checkpoint if partitioned else None
    key = checkpoint_partition_key(event.session, checkpoint) if checkpoint else None
    return dg.RunRequest(run_key=event.key, tags=event_tags(event), partition_key=key)


def checkpoint_materialization(
    event: SessionEvent, asset_key: dg.AssetKey
) -> dg.AssetMaterialization | None:
    if event.checkpoint is None:
        return None
    return dg.AssetMaterialization(
        asset_key=asset_key,
        partition=checkpoint_partition_key(event.session, event.checkpoint),
        description=f"{event.kind.value} in session {event.session_id}",
        metadata={
            **checkpoint_metadata(event.session, event.checkpoint),
            "event": dg.MetadataValue.text(event.kind.value),
        },
    )


def misrouted_error(
    sensor: str, target: str, expected: dg.DynamicPartitionsDefinition, found: object
) -> dg.DagsterInvalidDefinitionError:
    what = (
        "not partitioned"
        if found is None
        else f"partitioned by {getattr(found, 'name', None) or type(found).__name__}"
    )
    return dg.DagsterInvalidDefinitionError(
        f"Sensor '{sensor}' routes checkpoint events to '{target}', which is {what}. Each "
        f"checkpoint run carries a checkpoint partition key, so the target must be partitioned "
        f"by CHECKPOINT_PARTITIONS (dynamic partitions '{expected.name}'): "
        "`from rl_sessions_dagster import CHECKPOINT_PARTITIONS` and "
        "`@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, ...)`. For unpartitioned checkpoint "
        "runs, give the route partitions_def=None."
    )


def empty_selection_error(
    sensor: str, job: str, selection: str, matched: Collection[dg.AssetKey]
) -> dg.DagsterInvalidDefinitionError:
    what = (
        "matches no asset in these definitions"
        if not matched
        else "matches only assets that cannot run (external: "
        + ", ".join(sorted(k.to_user_string() for k in matched))
        + ")"
    )
    return dg.DagsterInvalidDefinitionError(
        f"Sensor '{sensor}' routes events to job '{job}', whose asset selection {selection} "
        f"{what}. Check the key (`dg list defs`), and that the "
        "module defining the asset is loaded: dg loads the Python modules of the defs folder "
        "(e.g. defs/evaluation.py), not a .py file placed beside a defs.yaml."
    )


def partitioned_by(found: object, expected: dg.DynamicPartitionsDefinition) -> bool:
    return isinstance(found, dg.DynamicPartitionsDefinition) and found.name == expected.name


class CheckedSelection(dg.AssetSelection):
    """An ``assets=`` route's selection, checked when Dagster resolves its asset job at load: it
    must match an asset that can run, and those must have the route's partitions."""

    def __init__(
        self,
        selection: dg.AssetSelection,
        *,
        sensor: str,
        job: str,
        expected: dg.DynamicPartitionsDefinition | None,
    ) -> None:
        self.selection, self.sensor, self.job, self.expected = selection, sensor, job, expected

    def resolve_inner(self, asset_graph: Any, allow_missing: bool) -> AbstractSet[dg.AssetKey]:
        matched = self.selection.resolve(asset_graph, allow_missing=True)
        runnable = matched & asset_graph.executable_asset_keys
        if not runnable:
            try:
                shown = f"'{self.selection.to_selection_str()}'"
            except Exception:  # a selection with no string form
                shown = repr(self.selection)
            raise empty_selection_error(self.sensor, self.job, shown, matched)
        if self.expected is not None:
            found = {asset_graph.get(key).partitions_def for key in runnable} - {None}
            if len(found) <= 1:  # several: Dagster refuses the job itself, saying why
                partitions = next(iter(found), None)
                if not partitioned_by(partitions, self.expected):
                    raise misrouted_error(self.sensor, self.job, self.expected, partitions)
        return self.selection.resolve_inner(asset_graph, allow_missing=allow_missing)

    def to_selection_str(self) -> str:
        return self.selection.to_selection_str()


def expected_partitions(route: EventRoute | ResourceRoute) -> dg.DynamicPartitionsDefinition | None:
    return route.partitions_def if isinstance(route, EventRoute) and route.partitioned else None


@dataclass(frozen=True)
class RouteTarget(Generic[R]):
    """A route with the job its runs execute (made here for ``assets=`` routes)."""

    route: R
    job: Job
    #: False for a user's asset job, whose partitioning only the asset graph knows.
    checked_at_load: bool = True

    @property
    def job_name(self) -> str:
        return self.job.name


def resolve_route(sensor: str, index: int, route: R) -> RouteTarget[R]:
    """The route's job (an asset job for ``assets=``), checked now if its partitioning is known."""
    expected = expected_partitions(route)
    if route.assets is not None:
        name = route.job_name or f"{sensor}_route_{index}"
        selection = dg.AssetSelection.from_coercible(route.assets)
        checked = CheckedSelection(selection, sensor=sensor, job=name, expected=expected)
        return RouteTarget(route, dg.define_asset_job(name, selection=checked))
    job = route.job
    assert job is not None  # a route holds exactly one of job / assets
    found = None if isinstance(job, dg.GraphDefinition) else job.partitions_def
    # A user's asset job (define_asset_job) without partitions_def: only the asset graph knows.
    known = isinstance(job, dg.JobDefinition | dg.GraphDefinition) or found is not None
    if expected is not None and known and not partitioned_by(found, expected):
        raise misrouted_error(sensor, job.name, expected, found)
    return RouteTarget(route, job, checked_at_load=known)


def resolve_routes(sensor: str, routes: Sequence[R]) -> tuple[RouteTarget[R], ...]:
    """Every route's target; each event kind in one route, each job run by one route."""
    seen: set[Any] = set()
    overlap: set[Any] = set()
    for route in routes:
        overlap |= seen & route.kinds
        seen |= route.kinds
    if overlap:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{sensor}': {sorted(k.value for k in overlap)} appear in more than one "
            "route; route each event kind to one target (one selection can hold several assets)"
        )
    targets = tuple(resolve_route(sensor, i, route) for i, route in enumerate(routes))
    names = [t.job_name for t in targets]
    if len(set(names)) != len(names):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{sensor}': two routes run the same job {names}; merge them into one route"
        )
    return targets


def check_at_tick(
    context: dg.SensorEvaluationContext, sensor: str, targets: Sequence[RouteTarget[Any]]
) -> None:
    """The check ``resolve_route`` could not do at load, on the resolved repository."""
    repo = context.repository_def
    if repo is None:
        return
    for target in targets:
        expected = expected_partitions(target.route)
        if target.checked_at_load or expected is None:
            continue
        found = repo.get_job(target.job_name).partitions_def
        if not partitioned_by(found, expected):
            raise misrouted_error(sensor, target.job_name, expected, found)


def route_request(
    target: RouteTarget[Any], default: dg.RunRequest, event: Any, *, name_job: bool
) -> dg.RunRequest | None:
    """The RunRequest naming its job when a sensor has several, then the route's
    ``run_request_fn``."""
    if name_job:
        default = default.with_replaced_attrs(job_name=target.job_name)
    fn: Callable[[Any, dg.RunRequest], dg.RunRequest | None] | None = target.route.run_request_fn
    return default if fn is None else fn(event, default)
