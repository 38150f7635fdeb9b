"""Example-based tests of the event core's policies (the properties are in
test_tracker_properties.py)."""

import pytest

from rl_sessions_dagster.core import EventKind, TrackerState, advance
from rl_sessions_dagster.core.events import TrackerConfig
from rl_sessions_dagster.core.reading import collect
from rl_sessions_dagster.core.state import CursorError

from .world_model import FakeWorld


def tick(world, cursor, config):
    state = TrackerState.from_cursor(cursor)
    collected = collect(state, config, world, now_ms=world.clock_ms)
    outcome = advance(state, collected.observation, config)
    return outcome, outcome.state.to_cursor(), collected


def kinds(outcome):
    return [(e.kind, e.session_id, e.checkpoint_id) for e in outcome.events]


def test_first_tick_announces_no_history_and_then_follows_changes():
    world = FakeWorld(page_size=2)
    old = world.new_session("RUNNING")
    world.add_checkpoint(old, registered=True)
    done = world.new_session("RUNNING")
    world.set_status(done, "STOPPED")
    world.tick_clock(1)  # history is what was created strictly before the first read
    config = TrackerConfig()
    first, cursor, _ = tick(world, None, config)
    assert first.events == []
    world.tick_clock(1000)
    c2 = world.add_checkpoint(old, registered=True)
    world.set_status(old, "STOPPED")
    second, cursor, _ = tick(world, cursor, config)
    assert kinds(second) == [
        (EventKind.CHECKPOINT_CREATED, old, c2),
        (EventKind.CHECKPOINT_REGISTERED, old, c2),
        (EventKind.SESSION_STOPPED, old, None),
    ]


def test_backfill_announces_history_in_order_under_a_cap():
    world = FakeWorld(page_size=2)
    for _ in range(3):
        sid = world.new_session("RUNNING")
        world.add_checkpoint(sid, registered=False)
        world.set_status(sid, "ERROR")
        world.tick_clock(10)
    config = TrackerConfig(backfill=True, max_events=2, kinds=frozenset({EventKind.SESSION_ERROR}))
    cursor, seen = None, []
    for _ in range(5):
        outcome, cursor, _ = tick(world, cursor, config)
        assert len(outcome.events) <= 2
        seen += [e.session_id for e in outcome.events]
    assert sorted(seen) == sorted(world.sessions)
    assert len(seen) == 3


def test_session_born_and_failed_between_ticks_is_announced_once():
    world = FakeWorld()
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    sid = world.new_session("CREATING")
    world.set_status(sid, "ERROR")
    outcome, cursor, _ = tick(world, cursor, config)
    assert kinds(outcome) == [(EventKind.SESSION_ERROR, sid, None)]
    again, cursor, _ = tick(world, cursor, config)
    assert again.events == []


def test_registration_lag_is_announced_when_it_lands_and_abandoned_after_the_wait():
    world = FakeWorld()
    config = TrackerConfig(registration_wait_ms=60_000)
    sid = world.new_session("RUNNING")
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    late = world.add_checkpoint(sid, registered=False)
    never = world.add_checkpoint(sid, registered=False)
    out, cursor, _ = tick(world, cursor, config)
    assert [k for k, *_ in kinds(out)] == [EventKind.CHECKPOINT_CREATED] * 2
    world.sessions[sid].checkpoints[0].registered = True
    out, cursor, _ = tick(world, cursor, config)
    assert kinds(out) == [(EventKind.CHECKPOINT_REGISTERED, sid, late)]
    world.tick_clock(61_000)
    out, cursor, _ = tick(world, cursor, config)
    assert out.events == []
    assert any(never in note for note in out.notes)
    assert TrackerState.from_cursor(cursor).tracked[sid].pending == []


def test_unknown_status_is_a_generic_change_and_the_session_stays_tracked():
    world = FakeWorld()
    config = TrackerConfig()
    sid = world.new_session("RUNNING")
    _, cursor, _ = tick(world, None, config)
    world.set_status(sid, "WEIRD_PAUSED")
    out, cursor, collected = tick(world, cursor, config)
    assert kinds(out) == [(EventKind.SESSION_STATUS_CHANGED, sid, None)]
    assert out.events[0].previous_status == "TRAINING_SESSION_STATUS_RUNNING"
    assert collected.fetched_ids == [sid]  # neither list shows it: fetched by id
    world.set_status(sid, "STOPPED")
    out, cursor, _ = tick(world, cursor, config)
    assert kinds(out) == [(EventKind.SESSION_STOPPED, sid, None)]


def test_steady_state_newest_first_reads_one_page_of_each_list():
    world = FakeWorld(page_size=100)
    for i in range(1000):
        sid = world.new_session("RUNNING")
        if i >= 50:
            world.set_status(sid, "STOPPED")
        world.tick_clock(1)
    config = TrackerConfig(lookback_ms=100)
    _, cursor, _ = tick(world, None, config)
    for _ in range(12):  # the first complete pass verifies the order, spread over ticks
        _, cursor, collected = tick(world, cursor, config)
    world.tick_clock(5000)
    _, cursor, collected = tick(world, cursor, config)
    assert TrackerState.from_cursor(cursor).order == "newest_first"
    assert collected.requests == 2


def test_unordered_list_is_detected_and_scanned_whole():
    world = FakeWorld(order="unordered", page_size=2)
    for _ in range(6):
        world.set_status(world.new_session("RUNNING"), "STOPPED")
        world.tick_clock(10)
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    _, cursor, _ = tick(world, cursor, config)
    assert TrackerState.from_cursor(cursor).order == "unordered"


def test_cursor_is_small_with_fifty_active_sessions_of_ten_checkpoints():
    world = FakeWorld(page_size=100)
    sessions = [world.new_session("RUNNING") for _ in range(50)]
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    for _ in range(10):  # checkpoints minutes apart, as training saves them
        world.tick_clock(60_000)
        for sid in sessions:
            world.add_checkpoint(sid, registered=True)
    world.tick_clock(1000)
    _, cursor, _ = tick(world, cursor, config)
    assert len(TrackerState.from_cursor(cursor).tracked) == 50
    assert len(cursor) < 4096


@pytest.mark.parametrize("bad", ["{", "[]", '{"v": 99}', '{"v": 1}', "null", "x" * 10])
def test_unreadable_cursor_raises_cursor_error(bad):
    with pytest.raises(CursorError):
        TrackerState.from_cursor(bad)


def test_checkpoints_in_the_same_millisecond_across_ticks_are_all_announced():
    """Second-resolution timestamps make ties common; the id hash must not decide newness."""
    world = FakeWorld()
    sid = world.new_session("RUNNING")
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    announced = []
    for _ in range(12):  # the clock does not move: every checkpoint has the same created_at
        cid = world.add_checkpoint(sid, registered=True)
        out, cursor, _ = tick(world, cursor, config)
        announced += [e.checkpoint_id for e in out.events if e.kind is EventKind.CHECKPOINT_CREATED]
        assert cid in announced
    assert len(announced) == len(set(announced)) == 12


def test_a_long_scan_does_not_starve_fetching_departed_sessions():
    """With reads for one list page and one more per tick, departures are still checked."""
    world = FakeWorld(page_size=2)
    paused = world.new_session("RUNNING")
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    for _ in range(8):  # many sessions born and failed: the scan needs several pages
        world.set_status(world.new_session("CREATING"), "ERROR")
    world.set_status(paused, "WEIRD_PAUSED")  # in neither list: only a GET shows it
    state = TrackerState.from_cursor(cursor)
    world.reads = 0
    collected = collect(
        state, config, world, now_ms=world.clock_ms, out_of_time=lambda: world.reads >= 2
    )
    out = advance(state, collected.observation, config)
    assert collected.fetched_ids == [paused]
    assert [e.kind for e in out.events] == [EventKind.SESSION_STATUS_CHANGED]
