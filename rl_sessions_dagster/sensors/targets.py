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
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)

from .options import EventRoute, ResourceRoute

if TYPE_CHECKING:
    from dagster._core.definitions.target import ExecutableDefinition
    from typing_extensions import TypeIs

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


class _CheckedAssetJob(UnresolvedAssetJobDefinition):
    """An asset job that, when Dagster resolves it at load, checks that its selection matched
    an asset (else the partition check would blame partitioning) and then its partitioning."""

    _rl_sensor: str = ""
    _rl_expected: dg.DynamicPartitionsDefinition | None = None

    def resolve(self, asset_graph: Any, *args: Any, **kwargs: Any) -> dg.JobDefinition:
        matched = self.selection.resolve(asset_graph, allow_missing=True)
        if not matched & asset_graph.executable_asset_keys:
            raise empty_selection_error(
                type(self)._rl_sensor, self.name, _shown(self.selection), matched
            )
        job = super().resolve(asset_graph, *args, **kwargs)
        expected = type(self)._rl_expected
        if expected is not None and not partitioned_by(job.partitions_def, expected):
            raise misrouted_error(type(self)._rl_sensor, job.name, expected, job.partitions_def)
        return job


def _shown(selection: dg.AssetSelection) -> str:
    try:
        return f"'{selection.to_selection_str()}'"
    except Exception:  # a selection with no string form
        return repr(selection)


def _checked_asset_job(
    sensor: str,
    base: UnresolvedAssetJobDefinition,
    expected: dg.DynamicPartitionsDefinition | None,
) -> UnresolvedAssetJobDefinition:
    cls = type(
        "CheckpointAssetJob", (_CheckedAssetJob,), {"_rl_sensor": sensor, "_rl_expected": expected}
    )
    fields = {name: getattr(base, name) for name in base._fields}  # type: ignore[attr-defined]
    return cls(**fields)


def is_job(target: object) -> "TypeIs[ExecutableDefinition]":
    """A job (rather than an asset selection) as a sensor's ``job=``/``target=`` may give it."""
    return isinstance(target, dg.JobDefinition | dg.GraphDefinition | UnresolvedAssetJobDefinition)


def expected_partitions(route: EventRoute | ResourceRoute) -> dg.DynamicPartitionsDefinition | None:
    """The partitions a route's target must have: the route's, when its runs carry a key."""
    return route.partitions_def if isinstance(route, EventRoute) and route.partitioned else None


@dataclass(frozen=True)
class RouteTarget(Generic[R]):
    """A route with the job its runs execute (made here for ``assets=`` routes)."""

    route: R
    job: "ExecutableDefinition"

    @property
    def job_name(self) -> str:
        return self.job.name

    @property
    def expected(self) -> dg.DynamicPartitionsDefinition | None:
        """The partitions the target must have: the route's, when its runs carry a key."""
        return expected_partitions(self.route)

    @property
    def checked_at_load(self) -> bool:
        """False for a user's asset job whose partitioning only the asset graph knows."""
        return not (
            isinstance(self.job, UnresolvedAssetJobDefinition)
            and not isinstance(self.job, _CheckedAssetJob)
            and self.job.partitions_def is None
        )


def resolve_route(sensor: str, index: int, route: R) -> RouteTarget[R]:
    """The route's job (an asset job named ``job_name`` for ``assets=``), checked now where its
    partitioning is known."""
    expected = expected_partitions(route)
    if route.assets is not None:
        name = route.job_name or f"{sensor}_route_{index}"
        asset_job = dg.define_asset_job(name, selection=route.assets)
        return RouteTarget(route, _checked_asset_job(sensor, asset_job, expected))
    job = route.job
    assert job is not None  # a route holds exactly one of job / assets
    if expected is not None:
        if isinstance(job, dg.GraphDefinition):
            raise misrouted_error(sensor, job.name, expected, None)
        found = job.partitions_def
        if (isinstance(job, dg.JobDefinition) or found is not None) and not partitioned_by(
            found, expected
        ):
            raise misrouted_error(sensor, job.name, expected, found)
    return RouteTarget(route, job)


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
