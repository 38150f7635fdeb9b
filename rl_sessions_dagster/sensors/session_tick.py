"""The session family's tick body: read the API (``collect``), run the pure core (``advance``),
turn the events into run requests, partitions and runless materializations.

Loaded by the session sensor on its first tick (not with the definitions): it is what brings
in the tracker and the API's models.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dagster as dg

from ..core import SessionEvent, TrackerState, advance
from ..core.reading import collect
from ..partitions import CHECKPOINT_PARTITIONS
from .client_source import ClientSessionSource
from .run_requests import checkpoint_materialization, default_run_request
from .session_sensor import SensorPlan
from .targets import check_at_tick
from .tick import TRANSIENT_ERRORS, SensorFamily, Tick, TickOutcome

#: pages of the unfiltered session list a tick may read for discovery (after the first tick).
DISCOVERY_PAGES_PER_TICK = 50

#: The session tracker as a sensor family of the tick skeleton.
SESSIONS = SensorFamily(TrackerState.from_cursor, TrackerState)


def session_tick(plan: SensorPlan) -> Callable[[Tick, TrackerState], TickOutcome[TrackerState]]:
    """The session family's tick body: collect → advance → run requests."""

    def body(tick: Tick, state: TrackerState) -> TickOutcome[TrackerState]:
        context = tick.context
        check_at_tick(context, plan.name, list(plan.targets))
        source = ClientSessionSource(
            tick.client,
            plan.session_filter,
            deadline=tick.deadline,
            page_size=plan.options.page_size,
            server_clock=tick.clock,
        )
        reserve = min(5.0, plan.budget / 4)
        collected = collect(
            state,
            plan.config,
            source,
            now_ms=tick.now_ms,
            out_of_time=lambda: tick.out_of_time(reserve),
            transient=TRANSIENT_ERRORS,
            discovery_pages_per_tick=DISCOVERY_PAGES_PER_TICK,
        )
        for item in source.skipped:
            context.log.warning(
                f"skipped an unreadable item of the API's lists (id {item.id or 'unreadable'}, "
                f"field {item.field or '(the item)'}: {item.reason}); it is read again when "
                "it is listed again"
            )
        for sid in collected.unreadable:
            context.log.warning(f"session {sid} could not be read; it is fetched again next tick")
        outcome = advance(state, collected.observation, plan.config)
        for note in outcome.notes:
            context.log.warning(note)
        built = _build_requests(outcome.events, plan)
        summary = (
            f"{len(built.run_requests)} run(s) from {len(outcome.events)} event(s); "
            f"tracking {len(outcome.state.tracked)} session(s)"
        )
        if outcome.deferred:
            summary += (
                f"; more events than max_runs_per_tick={plan.options.max_runs_per_tick}, "
                "rest next tick"
            )
        if collected.interrupted:
            summary += f"; read stopped early ({collected.interrupted}), rest next tick"
        unreadable = len(source.skipped) + len(collected.unreadable)
        if unreadable:
            summary += f"; {unreadable} unreadable item(s) skipped (retried when read again)"
        return TickOutcome(
            outcome.state,
            summary,
            built.run_requests,
            built.partition_requests(),
            built.asset_events,
            requests=collected.requests,
        )

    return body


@dataclass
class _Built:
    run_requests: list[dg.RunRequest]
    asset_events: list[dg.AssetMaterialization]
    partition_keys: dict[str, tuple[dg.DynamicPartitionsDefinition, list[str]]]

    def add_partition(self, partitions_def: dg.DynamicPartitionsDefinition, key: str) -> None:
        entry = self.partition_keys.setdefault(str(partitions_def.name), (partitions_def, []))
        entry[1].append(key)

    def partition_requests(self) -> list[dg.AddDynamicPartitionsRequest]:
        return [
            pdef.build_add_request(list(dict.fromkeys(keys)))
            for pdef, keys in self.partition_keys.values()
            if keys
        ]


def _build_requests(events: Sequence[SessionEvent], plan: SensorPlan) -> _Built:
    built = _Built([], [], {})
    for event in events:
        target = plan.target_for(event.kind)
        if target is None:
            if event.kind in plan.announce:
                _announce(built, event, plan.checkpoint_asset_key)
            continue
        route = target.route
        request: dg.RunRequest | None = default_run_request(event, partitioned=route.partitioned)
        if plan.name_jobs and request is not None:
            request = request.with_replaced_attrs(job_name=target.job_name)
        if route.run_request_fn is not None and request is not None:
            request = route.run_request_fn(event, request)
        if request is None:
            continue
        built.run_requests.append(request)
        if event.checkpoint is None:
            continue
        if route.partitioned and route.partitions_def is not None and request.partition_key:
            built.add_partition(route.partitions_def, request.partition_key)
        _announce(built, event, plan.checkpoint_asset_key)
    return built


def _announce(built: _Built, event: SessionEvent, asset_key: dg.AssetKey | None) -> None:
    """The checkpoint's partition and the runless materialization of the checkpoint asset."""
    if asset_key is None:
        return
    mat = checkpoint_materialization(event, asset_key)
    if mat is not None and mat.partition is not None:
        built.add_partition(CHECKPOINT_PARTITIONS, str(mat.partition))
        built.asset_events.append(mat)
