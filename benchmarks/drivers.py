"""The four sensors compared tick by tick, behind one interface: ``tick() -> Tick``.

* ``OursSensor`` — this project's sensor function, evaluated through Dagster's
  ``evaluate_tick`` with a real ``DagsterInstance`` (what the daemon runs);
* ``OursCore`` — the same reads and state machine without Dagster: ``collect`` over a
  ``ClientSessionSource`` then ``advance``, exactly as the sensor body does;
* ``NaiveList`` — lists every session (all pages, all statuses) each tick and diffs it against
  the full set of seen sessions/checkpoints kept in its cursor;
* ``NaiveGet`` — lists every session for its id, then GETs each one and diffs the same way.

All four use this project's ``RLSessionsClient`` (a new client per tick, as the sensor does), so
the differences measured are the algorithms', not the HTTP stacks'. Events are compared as
``(kind, session_id, checkpoint_id | None)``.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    PollingOptions,
    SessionFilter,
    TogetherRLResource,
    build_session_sensor,
)
from rl_sessions_dagster.api import RLSessionsClient, ServerClock, TrainingSession
from rl_sessions_dagster.core import TrackerState, advance
from rl_sessions_dagster.core.events import TERMINAL_EVENT_FOR_STATUS, TrackerConfig
from rl_sessions_dagster.core.reading import collect
from rl_sessions_dagster.sensors.options import DEFAULT_TICK_BUDGET_SECONDS
from rl_sessions_dagster.sensors.session_sensor import ClientSessionSource
from rl_sessions_dagster.sensors.tick import TRANSIENT_ERRORS, tick_budget

Event = tuple[str, str, str | None]
SENSOR_NAME = "bench_all_events"


@dataclass
class Tick:
    events: set[Event]
    cursor: str
    #: anything unusual the sensor reported (read stopped early, events deferred).
    note: str = ""


@dg.op
def _noop() -> None:
    pass


@dg.job
def bench_job() -> None:
    _noop()


def _resource(base_url: str, api_key: str) -> TogetherRLResource:
    return TogetherRLResource(api_key=api_key, base_url=base_url)


class OursSensor:
    """``build_session_sensor`` (every event kind to one job, defaults otherwise) via
    ``evaluate_tick``."""

    name = "ours: sensor via evaluate_tick"
    key = "ours_sensor"

    def __init__(self, base_url: str, api_key: str, instance: dg.DagsterInstance) -> None:
        sensor = build_session_sensor(
            name=SENSOR_NAME,
            routes=[EventRoute(list(EventKind), job=bench_job, partitions_def=None)],
            options=PollingOptions(checkpoint_asset_key=None),
        )
        self.defs = dg.Definitions(
            jobs=[bench_job],
            sensors=[sensor],
            resources={"together": _resource(base_url, api_key)},
        )
        self.sensor = self.defs.get_sensor_def(SENSOR_NAME)
        self.instance = instance
        self.cursor: str | None = None

    def tick(self) -> Tick:
        # The tick's console log line goes to a buffer instead of the benchmark's stderr.
        with (
            contextlib.redirect_stderr(io.StringIO()),
            dg.build_sensor_context(
                instance=self.instance,
                instance_ref=self.instance.get_ref(),
                definitions=self.defs,
                cursor=self.cursor,
                resources={"together": self.defs.resources["together"]},
                sensor_name=SENSOR_NAME,
            ) as ctx,
        ):
            data = self.sensor.evaluate_tick(ctx)
        if data.cursor is not None:
            self.cursor = data.cursor
        events = {
            (
                r.tags["together/event"],
                r.tags["together/session_id"],
                r.tags.get("together/checkpoint_id"),
            )
            for r in data.run_requests
        }
        message = data.skip_message or ""
        note = message if ("stopped early" in message or "unavailable" in message) else ""
        return Tick(events, self.cursor or "", note)


class OursCore:
    """``collect`` + ``advance`` with the sensor's own source, budget and defaults."""

    name = "ours: collect+advance (no Dagster)"
    key = "ours_core"

    def __init__(self, base_url: str, api_key: str) -> None:
        self.resource = _resource(base_url, api_key)
        self.config = TrackerConfig(kinds=frozenset(EventKind), max_events=25)
        self.budget = tick_budget(DEFAULT_TICK_BUDGET_SECONDS)
        self.cursor: str | None = None

    def tick(self) -> Tick:
        deadline = time.monotonic() + self.budget
        reserve = min(5.0, self.budget / 4)
        state = TrackerState.from_cursor(self.cursor)
        clock = ServerClock()
        with self.resource.get_client(server_clock=clock) as client:
            source = ClientSessionSource(
                client, SessionFilter(), deadline=deadline, page_size=100, server_clock=clock
            )
            collected = collect(
                state,
                self.config,
                source,
                now_ms=int(datetime.now(UTC).timestamp() * 1000),
                out_of_time=lambda: time.monotonic() > deadline - reserve,
                transient=TRANSIENT_ERRORS,
            )
        outcome = advance(state, collected.observation, self.config)
        self.cursor = outcome.state.to_cursor()
        events = {(e.kind.value, e.session_id, e.checkpoint_id) for e in outcome.events}
        note = collected.interrupted or ("deferred" if outcome.deferred else "")
        return Tick(events, self.cursor, note)


# -- the naive sensors -------------------------------------------------------------------------


def _facts(session: TrainingSession) -> list[object]:
    """What the naive cursor keeps per session: short status and {checkpoint id: registered}."""
    return [
        session.status.short if session.status.name != "UNKNOWN" else session.raw_status,
        {c.id: int(c.is_registered) for c in session.inference_checkpoints},
    ]


def _status_kind(short: str) -> str:
    for status, kind in TERMINAL_EVENT_FOR_STATUS.items():
        if status.short == short:
            return kind.value
    return EventKind.SESSION_STATUS_CHANGED.value


def naive_diff(seen: dict[str, list], current: dict[str, list]) -> set[Event]:
    events: set[Event] = set()
    for sid, (status, checkpoints) in current.items():
        old_status, old_checkpoints = seen.get(sid) or ("", {})
        for cid, registered in checkpoints.items():
            if cid not in old_checkpoints:
                events.add((EventKind.CHECKPOINT_CREATED.value, sid, cid))
            if registered and not old_checkpoints.get(cid):
                events.add((EventKind.CHECKPOINT_REGISTERED.value, sid, cid))
        if status != old_status:
            events.add((_status_kind(status), sid, None))
    return events


class NaiveList:
    """Every page of every session each tick; the cursor is the whole seen set (JSON)."""

    name = "naive: list all pages, diff seen set"
    key = "naive_list"

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url, self.api_key = base_url, api_key
        self.cursor: str | None = None

    def read(self, client: RLSessionsClient) -> dict[str, list]:
        return {s.id: _facts(s) for s in client.list_sessions(page_size=100)}

    def tick(self) -> Tick:
        seen = json.loads(self.cursor) if self.cursor else None
        with RLSessionsClient(self.api_key, base_url=self.base_url) as client:
            current = self.read(client)
        events = naive_diff(seen, current) if seen is not None else set()
        self.cursor = json.dumps(current, separators=(",", ":"))
        return Tick(events, self.cursor)


class NaiveGet(NaiveList):
    """Lists every session for its id, then GETs each one (the list's body is not trusted)."""

    name = "naive: list, then GET each session"
    key = "naive_get"

    def read(self, client: RLSessionsClient) -> dict[str, list]:
        ids = [s.id for s in client.list_sessions(page_size=100)]
        return {sid: _facts(client.get_session(sid)) for sid in ids}


def verified(cursor: str | None) -> bool:
    """Past the first tick and the first complete verification pass of the list order."""
    if not cursor:
        return False
    state = TrackerState.from_cursor(cursor)
    return state.initialized and state.order != "unverified" and state.scan is None
