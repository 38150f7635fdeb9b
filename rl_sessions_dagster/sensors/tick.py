"""The tick every sensor shares (deadline, transient skips, outage alarm, cursor recovery, one log
line) and the routes (checked at load, not at the first run; the ``together/`` run tags)."""

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import AbstractSet, Any, Generic, Protocol, Self, TypeVar  # noqa: UP035 - AssetSelection's own type

import dagster as dg

from ..api import RLSessionsClient, ServerClock
from ..api.errors import TRANSIENT_ERRORS
from ..core.state import CursorError
from ..partitions import Job
from ..resource import TogetherRLResource
from ..resource.together_rl import tick_retry_log
from .options import EventRoute, ResourceRoute, TickOptions

UNAVAILABLE = "Together RL API unavailable"
HISTORY_DEPTH = 500  # past ticks searched for a readable cursor
_CHECK = "check the API status, the network from this machine and the resource's base_url"


class TogetherRLUnavailableError(Exception):
    """Every tick has failed to read the API for longer than the sensor's alarm threshold."""


class TickState(Protocol):
    """A family's state, which is also its cursor."""

    initialized: bool
    failing_since_ms: int | None

    def __init__(self) -> None: ...
    @classmethod
    def from_cursor(cls, cursor: str | None) -> Self: ...
    def to_cursor(self) -> str: ...


S = TypeVar("S", bound=TickState)


def tick_budget(requested: float) -> float:
    """The budget, kept 15 s under the daemon's gRPC sensor timeout if that is set lower."""
    raw = os.getenv("DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS") or os.getenv(
        "DAGSTER_GRPC_TIMEOUT_SECONDS"
    )
    try:
        grpc_timeout = float(raw) if raw else 60.0
    except ValueError:
        grpc_timeout = 60.0
    return max(1.0, min(requested, grpc_timeout - 15.0))


def local_now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Tick:
    """One tick's context, client, clock and deadline, handed to a family's body."""

    context: dg.SensorEvaluationContext
    client: RLSessionsClient
    clock: ServerClock
    started: float
    deadline: float
    now_ms: int  # the local clock when the tick began (``clock.last_ms`` is the API's)


@dataclass
class TickOutcome(Generic[S]):
    """What a body decided: the next state and what to ask of Dagster."""

    state: S
    summary: str
    run_requests: list[dg.RunRequest] = field(default_factory=list)
    partition_requests: Sequence[dg.AddDynamicPartitionsRequest] = ()
    asset_events: Sequence[dg.AssetMaterialization] = ()
    requests: int | None = None  # API requests the body counts itself (default: HTTP attempts)


Body = Callable[[Tick, S], TickOutcome[S]]


def tick_sensor(
    state_type: type[S], body: Body[S], options: TickOptions, *, jobs: Sequence[Job], **sensor: Any
) -> dg.SensorDefinition:
    """``body`` in the tick skeleton (``sensor``: name, interval, status, description). The
    resource is resolved per tick, never closed over: an unresolved ``EnvVar`` would be the key."""
    budget = tick_budget(options.tick_budget_seconds)

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        with tick_retry_log(context.log) as retries:
            started, now_ms = time.monotonic(), local_now_ms()
            state = read_state(context, state_type)
            resource: TogetherRLResource = getattr(context.resources, options.resource_key)
            clock, url = ServerClock(), "the resource's base_url"
            try:
                with resource.get_client(server_clock=clock) as client:
                    url = client.base_url
                    tick = Tick(context, client, clock, started, started + budget, now_ms)
                    out = body(tick, state)
            except TRANSIENT_ERRORS as exc:
                # Skipped keeping the cursor; lasting, one tick per alarm window fails loudly.
                since = state.failing_since_ms if state.failing_since_ms is not None else now_ms
                error = next((t.error for t in stored_ticks(context, limit=1)), None)
                if error is not None and f"{UNAVAILABLE} for" in (error.message or ""):
                    since = now_ms  # the alarm was raised: a new window starts
                elif now_ms - since >= options.unavailable_alarm_seconds * 1000:
                    raise TogetherRLUnavailableError(
                        f"{UNAVAILABLE} for {int((now_ms - since) / 60000)} min: every tick "
                        f"since {_iso(since / 1000)} failed to read {url} (last error: {exc}). "
                        f"The sensor keeps retrying each tick and loses nothing; {_CHECK}."
                    ) from exc
                reason = f"{UNAVAILABLE} at {url}, will retry next tick: {exc}; {_CHECK}"
                if retries.count:
                    context.log.info(retries.summary())
                if not state.initialized:
                    return dg.SkipReason(reason)  # nothing to keep before a first good tick
                state.failing_since_ms = since
                return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=state.to_cursor())
        out.state.failing_since_ms = None
        requests = out.requests if out.requests is not None else client.stats.requests
        ms = int((time.monotonic() - started) * 1000)
        summary = f"{out.summary}; {requests} API request(s) ({retries.count} retried) in {ms} ms"
        context.log.info(summary)
        return dg.SensorResult(
            run_requests=out.run_requests,
            skip_reason=None if out.run_requests else dg.SkipReason(summary),
            cursor=out.state.to_cursor(),
            dynamic_partitions_requests=list(out.partition_requests) or None,
            asset_events=list(out.asset_events) or None,
        )

    return dg.SensorDefinition(
        evaluation_fn=evaluate, jobs=jobs, required_resource_keys={options.resource_key}, **sensor
    )


def stored_ticks(context: dg.SensorEvaluationContext, limit: int = HISTORY_DEPTH) -> list:
    """Newest first; of same-named sensors (other code locations), the one of this cursor."""
    try:
        instance = context.instance
    except Exception:  # built without an instance (a plain unit test)
        return []
    # Filtered here on the state's own fields: the type filter's enum is not public.
    states = [
        s
        for s in instance.all_instigator_state()
        if s.instigator_type.value == "SENSOR"
        and s.instigator_name == context.sensor_name
        and (
            context.repository_name is None
            or s.origin.repository_origin.repository_name == context.repository_name
        )
    ]
    states.sort(key=lambda s: getattr(s.instigator_data, "cursor", None) != context.cursor)
    return [
        t
        for s in states[:1]
        for t in instance.get_ticks(s.instigator_origin_id, s.selector_id, limit=limit)
    ]


def read_state(context: dg.SensorEvaluationContext, state_type: type[S]) -> S:
    """The state from the cursor, else from the tick history (events since are announced again
    and Dagster skips a run_key that has a run; starting over would drop them), else afresh."""
    try:
        return state_type.from_cursor(context.cursor)
    except CursorError as exc:
        problem = str(exc)
    for tick in stored_ticks(context):
        if not tick.cursor or tick.cursor == context.cursor:
            continue
        try:
            state = state_type.from_cursor(tick.cursor)
        except CursorError:
            continue
        context.log.warning(
            f"{problem}; restored the cursor of the tick at {_iso(tick.timestamp)} from this "
            "sensor's tick history: events since then are announced again, and Dagster skips "
            "any run_key that already has a run"
        )
        return state
    context.log.warning(
        f"{problem}; no readable cursor in this sensor's tick history: starting over from "
        "the current state of the API (what happened before now is not announced)"
    )
    return state_type()


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(int(epoch_s), tz=UTC).isoformat(timespec="seconds")


R = TypeVar("R", EventRoute, ResourceRoute)  # a route of either family, resolved alike

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


def check_partitioned(
    sensor: str, target: str, expected: dg.DynamicPartitionsDefinition, found: object
) -> None:
    """A checkpoint route's target, at load or at the first tick: by ``expected``, or refused."""
    if isinstance(found, dg.DynamicPartitionsDefinition) and found.name == expected.name:
        return
    what = f"partitioned by {getattr(found, 'name', None) or type(found).__name__}"
    what = "not partitioned" if found is None else what
    raise dg.DagsterInvalidDefinitionError(
        f"Sensor '{sensor}' routes checkpoint events to '{target}', which is {what}. Each "
        f"checkpoint run carries a checkpoint partition key, so the target must be partitioned "
        f"by CHECKPOINT_PARTITIONS (dynamic partitions '{expected.name}'): "
        "`from rl_sessions_dagster import CHECKPOINT_PARTITIONS` and "
        "`@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, ...)`. For unpartitioned checkpoint "
        "runs, give the route partitions_def=None."
    )


@dataclass(eq=False)
class CheckedSelection(dg.AssetSelection):
    """An ``assets=`` route's selection, checked at load: runnable assets with its partitions."""

    selection: dg.AssetSelection
    sensor: str
    job: str
    expected: dg.DynamicPartitionsDefinition | None

    def resolve_inner(self, asset_graph: Any, allow_missing: bool) -> AbstractSet[dg.AssetKey]:
        matched = self.selection.resolve(asset_graph, allow_missing=True)
        runnable = matched & asset_graph.executable_asset_keys
        if not runnable:
            try:
                shown = f"'{self.selection.to_selection_str()}'"
            except Exception:  # a selection with no string form
                shown = repr(self.selection)
            external = ", ".join(sorted(k.to_user_string() for k in matched))
            what = f"matches only assets that cannot run (external: {external})"
            raise dg.DagsterInvalidDefinitionError(
                f"Sensor '{self.sensor}' routes events to job '{self.job}', whose asset "
                f"selection {shown} "
                + (what if matched else "matches no asset in these definitions")
                + ". Check the key (`dg list defs`), and that the module defining the asset is "
                "loaded: dg loads the Python modules of the defs folder (e.g. "
                "defs/evaluation.py), not a .py file placed beside a defs.yaml."
            )
        if self.expected is not None:
            found = {asset_graph.get(key).partitions_def for key in runnable} - {None}
            if len(found) <= 1:  # several: Dagster refuses the job itself, saying why
                check_partitioned(self.sensor, self.job, self.expected, next(iter(found), None))
        return self.selection.resolve_inner(asset_graph, allow_missing=allow_missing)

    def to_selection_str(self) -> str:
        return self.selection.to_selection_str()


@dataclass(frozen=True)
class RouteTarget(Generic[R]):
    """A route with the job its runs execute (made here for ``assets=`` routes)."""

    route: R
    job: Job
    # What a user's asset job is checked against at each tick: only its asset graph knows.
    check_later: dg.DynamicPartitionsDefinition | None = None


def resolve_route(sensor: str, index: int, route: R) -> RouteTarget[R]:
    """The route's job (an asset job for ``assets=``), checked now if its partitioning is known."""
    expected = route.partitions_def if isinstance(route, EventRoute) and route.partitioned else None
    if route.assets is not None:
        name = route.job_name or f"{sensor}_route_{index}"
        selection = dg.AssetSelection.from_coercible(route.assets)
        checked = CheckedSelection(selection, sensor=sensor, job=name, expected=expected)
        # One process for the run and its steps: a second one per step only adds start-up time.
        made = dg.define_asset_job(name, selection=checked, executor_def=dg.in_process_executor)
        return RouteTarget(route, made)
    job = route.job
    assert job is not None  # a route holds exactly one of job / assets
    found = None if isinstance(job, dg.GraphDefinition) else job.partitions_def
    # A user's asset job (define_asset_job) without partitions_def: only the asset graph knows.
    known = isinstance(job, dg.JobDefinition | dg.GraphDefinition) or found is not None
    if expected is not None and known:
        check_partitioned(sensor, job.name, expected, found)
    return RouteTarget(route, job, None if known else expected)


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
    names = [t.job.name for t in targets]
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
        if target.check_later is not None:
            found = repo.get_job(target.job.name).partitions_def
            check_partitioned(sensor, target.job.name, target.check_later, found)


@dataclass
class RoutedRuns:
    """A run per routed event (job named among several routes), then its ``run_request_fn``."""

    targets: Sequence[RouteTarget[Any]]
    requests: list[dg.RunRequest] = field(default_factory=list)

    def add(
        self, target: RouteTarget[Any], event: Any, tags: dict[str, str], partition_key: Any = None
    ) -> dg.RunRequest | None:
        # run_key: the event's key, unique per fact, so Dagster dedupes a replayed tick.
        request = dg.RunRequest(run_key=event.key, tags=tags, partition_key=partition_key)
        if len(self.targets) > 1:
            request = request.with_replaced_attrs(job_name=target.job.name)
        fn = target.route.run_request_fn
        if (request := request if fn is None else fn(event, request)) is not None:
            self.requests.append(request)
        return request

    def summary(self, outcome: Any, tracking: str, max_runs: int) -> str:
        summary = f"{len(self.requests)} run(s) from {len(outcome.events)} event(s); {tracking}"
        if outcome.deferred:
            summary += f"; over max_runs_per_tick={max_runs}: rest next tick"
        return summary
