"""Cursors written by 0.2.0 keep loading with the same meaning, and the cursor stays small.

The fixtures in ``fixtures/cursors/`` are cursors in the 0.2.0 format (session v3, resource
v2), each beside what the code that wrote it read from it (``fixtures/cursors/README.md``).
"""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.core import EventKind, TrackerState
from rl_sessions_dagster.core.events import TrackerConfig
from rl_sessions_dagster.core.resources import ResourceTrackerState
from rl_sessions_dagster.core.state import (
    CURSOR_VERSION,
    CheckpointMark,
    CursorError,
    PendingCheckpoint,
    TrackedSession,
    compact_id,
    expand_id,
    short_id,
)

from .cursor_meaning import resource_meaning, session_meaning
from .test_tracker import tick
from .world_model import FakeWorld

FIXTURES = Path(__file__).parent / "fixtures" / "cursors"


def _fixtures(prefix: str) -> list[str]:
    return sorted(p.name.removesuffix(".cursor") for p in FIXTURES.glob(f"{prefix}*.cursor"))


def _load(name: str) -> tuple[str, dict]:
    cursor = (FIXTURES / f"{name}.cursor").read_text().strip()
    return cursor, json.loads((FIXTURES / f"{name}.meaning.json").read_text())


@pytest.mark.parametrize("name", _fixtures("session_"))
def test_a_0_2_session_cursor_loads_with_the_same_meaning(name):
    cursor, meaning = _load(name)
    assert json.loads(cursor)["v"] == CURSOR_VERSION
    state = TrackerState.from_cursor(cursor)
    assert session_meaning(state) == meaning
    assert state.to_cursor() == cursor  # one format: read and written the same


@pytest.mark.parametrize("name", _fixtures("resource"))
def test_a_0_2_resource_cursor_loads_with_the_same_meaning(name):
    cursor, meaning = _load(name)
    state = ResourceTrackerState.from_cursor(cursor)
    assert resource_meaning(state) == meaning
    assert state.to_cursor() == cursor
    with pytest.raises(CursorError):  # and the two kinds of cursor are never mixed up
        TrackerState.from_cursor(cursor)


@pytest.mark.parametrize(
    "older",
    ['{"v":1,"b":1}', '{"v":2,"b":1,"w":1,"m":1,"p":1,"r":{"~abc":5}}', "not json", "[1]"],
)
def test_a_cursor_of_another_format_is_refused(older):
    """Nothing older than 0.2.0 is read: the sensor rebuilds from its tick history instead."""
    with pytest.raises(CursorError):
        TrackerState.from_cursor(older)
    with pytest.raises(CursorError):
        ResourceTrackerState.from_cursor(older)


def test_the_busy_cursor_stays_small():
    """50 running sessions with 10 checkpoints each and 50 finished ones waiting."""
    cursor, _ = _load("session_checkpoint_sensor_50_running_50_pending")
    assert len(cursor) < 7_000


@pytest.mark.parametrize("spread", [False, True])
def test_fifty_finished_sessions_waiting_for_registrations_fit_in_4_kb(spread):
    """UUID ids as the API issues them; ``spread``: each session ended on a tick of its own,
    so they share no time (the worst case for grouping)."""
    world = FakeWorld(page_size=100, uuid_ids=True)
    config = TrackerConfig(kinds=frozenset(EventKind), lookback_ms=60_000)
    _, cursor, _ = tick(world, None, config)
    waiting = []
    for i in range(50):
        world.tick_clock(1000)
        sid = world.new_session("RUNNING")
        world.add_checkpoint(sid, registered=False)
        world.set_status(sid, "STOPPED")
        waiting.append(sid)
        if spread or i == 49:
            for _ in range(3):
                _, cursor, _ = tick(world, cursor, config)
    world.tick_clock(120_000)  # out of the look-back window: only the waiting remain
    _, cursor, _ = tick(world, cursor, config)
    state = TrackerState.from_cursor(cursor)
    assert sorted(sid for sid, t in state.tracked.items() if t.lingering) == sorted(waiting)
    assert len(cursor) <= 4096


@pytest.mark.parametrize(
    "value",
    ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
     "sess-1", "~", "~~x", "~ABCDEFGHIJKLMNOPQRSTUV", ""],
)  # fmt: skip
def test_ids_are_written_compactly_and_read_back_as_they_were(value):
    assert expand_id(compact_id(value)) == value
    state = TrackerState(initialized=True, recent_terminal={value: 1}, backfilled=[value])
    again = TrackerState.from_cursor(state.to_cursor())
    assert again.recent_terminal == {value: 1} and again.backfilled == [value]


@pytest.mark.parametrize(
    "bad",
    ['{"v":3,"pr":[["S",1,1,{"a":["c"]}]]}', '{"v":3,"pr":7}', '{"v":3,"t":{"~?":{}}}',
     '{"v":3,"zz":1}', '{"v":3,"t":{"s":{"p":[[1]]}}}'],
)  # fmt: skip
def test_a_damaged_current_cursor_raises_cursor_error(bad):
    with pytest.raises(CursorError):
        TrackerState.from_cursor(bad)


@given(st.one_of(st.uuids().map(str), st.text(max_size=40)))
def test_any_id_survives_the_compact_form(value):
    assert expand_id(compact_id(value)) == value


def _waiting(mark_ids):
    pending = [
        PendingCheckpoint(checkpoint_id=cid, first_seen_ms=2_000, created_ms=1_500)
        for cid in ("123e4567-e89b-12d3-a456-426614174009", "c-2")
    ]
    return TrackedSession(
        status="TRAINING_SESSION_STATUS_STOPPED",
        mark=CheckpointMark(time=1_500, ids=mark_ids),
        pending=pending,
        terminal_ms=2_100,
    )


@pytest.mark.parametrize("implied", [True, False])
def test_a_waiting_session_is_grouped_only_when_its_mark_is_implied(implied):
    ids = [short_id("123e4567-e89b-12d3-a456-426614174009"), short_id("c-2")]
    state = TrackerState(initialized=True, tracked={"s-1": _waiting(ids if implied else ids[::-1])})
    doc = json.loads(state.to_cursor())
    assert ("pr" in doc) is implied and ("t" in doc) is not implied
    assert TrackerState.from_cursor(state.to_cursor()) == state
