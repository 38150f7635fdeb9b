"""Where a route's runs go, checked as early as Dagster allows.

A checkpoint run carries a checkpoint partition key; a target that is not partitioned by the
checkpoint partitions fails in Dagster only when the first checkpoint arrives (``CheckError:
Job has no PartitionsDefinition``). Here the check runs at definitions load: at once for jobs
whose partitioning is known when built, and while Dagster resolves the asset jobs this module
makes for ``assets=`` routes. A user's ``define_asset_job`` without ``partitions_def`` is
resolved from assets the sensor cannot see, so it is checked on the sensor's first tick instead.
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import AbstractSet, Any, Generic, TypeVar  # noqa: UP035 - AssetSelection's own type

import dagster as dg

from ..partitions.jobs import Job
from .options import EventRoute, ResourceRoute

#: A route of either family: both are resolved here, by the same code.
R = TypeVar("R", EventRoute, ResourceRoute)


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
    """The selection of an ``assets=`` route, checked when Dagster resolves the route's asset
    job at load: it must match an asset that can run (else the partition check would blame
    partitioning), and those assets must have the route's partitions."""

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
            raise empty_selection_error(self.sensor, self.job, _shown(self.selection), matched)
        if self.expected is not None:
            found = {asset_graph.get(key).partitions_def for key in runnable} - {None}
            if len(found) <= 1:  # several: Dagster refuses the job itself, saying why
                partitions = next(iter(found), None)
                if not partitioned_by(partitions, self.expected):
                    raise misrouted_error(self.sensor, self.job, self.expected, partitions)
        return self.selection.resolve_inner(asset_graph, allow_missing=allow_missing)

    def to_selection_str(self) -> str:
        return self.selection.to_selection_str()


def _shown(selection: dg.AssetSelection) -> str:
    try:
        return f"'{selection.to_selection_str()}'"
    except Exception:  # a selection with no string form
        return repr(selection)


def expected_partitions(route: EventRoute | ResourceRoute) -> dg.DynamicPartitionsDefinition | None:
    """The partitions a route's target must have: the route's, when its runs carry a key."""
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

    @property
    def expected(self) -> dg.DynamicPartitionsDefinition | None:
        """The partitions the target must have: the route's, when its runs carry a key."""
        return expected_partitions(self.route)


def resolve_route(sensor: str, index: int, route: R) -> RouteTarget[R]:
    """The route's job (an asset job named ``job_name`` for ``assets=``), checked now where its
    partitioning is known."""
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
):
    """The check ``resolve_route`` could not do at load, on the resolved repository."""
    repo = context.repository_def
    if repo is None:
        return
    for target in targets:
        expected = target.expected
        if target.checked_at_load or expected is None:
            continue
        found = repo.get_job(target.job_name).partitions_def
        if not partitioned_by(found, expected):
            raise misrouted_error(sensor, target.job_name, expected, found)
