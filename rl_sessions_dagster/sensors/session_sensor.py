"""The session-event sensor: one API poll per tick (``collect`` → ``advance``), each event kind
routed to a job or an asset selection, one cursor for all."""

import time
from collections.abc import Iterable, Sequence

import dagster as dg

from ..core import SessionEvent, TrackerState, advance
from ..core.events import CHECKPOINT_EVENTS, EventKind, SessionFilter
from ..core.reading import collect
from ..partitions import CHECKPOINT_PARTITIONS_NAME, checkpoint_metadata, checkpoint_partition_key
from ..resource.session_source import ClientSessionSource
from .options import EventRoute, PollingOptions
from .options import event_kinds as parse_event_kinds
from .tick import (
    TRANSIENT_ERRORS,
    RoutedRuns,
    Tick,
    TickOutcome,
    check_at_tick,
    resolve_routes,
    run_tags,
    status_tag,
    tick_sensor,
)

DISCOVERY_PAGES_PER_TICK = 50  # of the unfiltered list, for discovery (after the first tick)


def build_session_sensor(
    *,
    name: str = "together_rl_events",
    routes: Sequence[EventRoute],
    session_filter: SessionFilter | None = None,
    options: PollingOptions | None = None,
    announce: Iterable[EventKind | str] = (),
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """``name`` is also the cursor's key (rename = start over). ``announce``: checkpoint kinds
    recorded (partition, runless materialization) even when no route runs them (with
    ``routes=[]``, downstream assets follow with ``AutomationCondition.eager()``)."""
    options = options or PollingOptions()
    announced = parse_event_kinds(announce) if announce else frozenset()
    if not routes and not announced:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' needs at least one EventRoute, or checkpoint kinds to announce"
        )
    asset_key = options.checkpoint_asset_key
    if announced and (asset_key is None or not announced <= CHECKPOINT_EVENTS):
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}': announce takes checkpoint kinds "
            f"({', '.join(sorted(k.value for k in CHECKPOINT_EVENTS))}) and needs "
            "options.checkpoint_asset_key (the asset whose partitions announce the checkpoints)"
        )
    targets = resolve_routes(name, routes)
    kinds = frozenset().union(announced, *(route.kinds for route in routes))
    config = options.tracker_config(kinds)
    flt = session_filter or SessionFilter()

    def body(tick: Tick, state: TrackerState) -> TickOutcome[TrackerState]:
        context = tick.context
        check_at_tick(context, name, list(targets))
        source = ClientSessionSource(tick.client, flt, tick.deadline, options.page_size, tick.clock)
        reserve = min(5.0, (tick.deadline - tick.started) / 4)
        collected = collect(
            state,
            config,
            source,
            now_ms=tick.now_ms,
            out_of_time=lambda: time.monotonic() > tick.deadline - reserve,
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
        outcome = advance(state, collected.observation, config)
        for note in outcome.notes:
            context.log.warning(note)
        runs = RoutedRuns(targets)
        materializations: list[dg.AssetMaterialization] = []
        partitions: dict[str, list[str]] = {}  # keys to add, by partitions name

        def announce_checkpoint(event: SessionEvent) -> None:
            session, checkpoint, kind = event.session, event.checkpoint, event.kind.value
            if asset_key is None or checkpoint is None:
                return
            key = checkpoint_partition_key(session, checkpoint)
            partitions.setdefault(CHECKPOINT_PARTITIONS_NAME, []).append(key)
            meta = checkpoint_metadata(session, checkpoint)  # a fresh dict
            meta["event"] = dg.MetadataValue.text(kind)
            text = f"{kind} in session {event.session_id}"
            materializations.append(dg.AssetMaterialization(asset_key, text, meta, partition=key))

        for event in outcome.events:
            target = next((t for t in targets if event.kind in t.route.kinds), None)
            if target is None:
                if event.kind in announced:
                    announce_checkpoint(event)
                continue
            route, session, checkpoint = target.route, event.session, event.checkpoint
            tags = run_tags(
                event=event.kind.value,
                session_id=session.id,
                session_status=status_tag(session.status, session.raw_status),
                checkpoint_id=checkpoint.id if checkpoint is not None else None,
                step=checkpoint.step if checkpoint is not None else session.step,
                base_model=session.base_model,
                display_name=session.display_name,
                previous_status=event.previous_status,
            )
            key = None
            if checkpoint is not None and route.partitioned:
                key = checkpoint_partition_key(session, checkpoint)
            if (request := runs.add(target, event, tags, key)) is None:
                continue
            pdef = route.partitions_def
            if route.partitioned and pdef is not None and request.partition_key:
                partitions.setdefault(str(pdef.name), []).append(request.partition_key)
            announce_checkpoint(event)
        tracking = f"tracking {len(outcome.state.tracked)} session(s)"
        summary = runs.summary(outcome, tracking, options.max_runs_per_tick)
        if collected.interrupted:
            summary += f"; read stopped early ({collected.interrupted}), rest next tick"
        if unreadable := len(source.skipped) + len(collected.unreadable):
            summary += f"; {unreadable} unreadable item(s) skipped (retried when read again)"
        return TickOutcome(
            outcome.state,
            summary,
            runs.requests,
            [
                dg.AddDynamicPartitionsRequest(pname, list(dict.fromkeys(keys)))
                for pname, keys in partitions.items()
            ],
            materializations,
            requests=collected.requests,
        )

    named = ", ".join(sorted(k.value for k in kinds))
    shown = asset_key.to_user_string() if asset_key else "the checkpoint asset"
    return tick_sensor(
        TrackerState,
        body,
        options,
        name=name,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description
        or (
            f"Together RL events ({named}) → runs."
            if targets
            else f"Together RL checkpoints ({named}) → partitions and runless "
            f"materializations of {shown}."
        ),
    )
