"""The finished-session list in each order a real service plausibly uses (issue #12): newest
first (floor), oldest first (follow the tail), and no time order (pages bounded per tick)."""

import math

import pytest

from rl_sessions_dagster.core import EventKind, TrackerState
from rl_sessions_dagster.core.events import ListOrder, TrackerConfig

from .test_tracker import kinds, tick
from .world_model import FakeWorld


def _world(order: str, n: int) -> FakeWorld:
    world = FakeWorld(order=order, page_size=100)
    for i in range(n):
        sid = world.new_session("RUNNING")
        if i >= 20:
            world.set_status(sid, "STOPPED")
        world.tick_clock(1)
    return world


def _settle(world, config, ticks=40):
    _, cursor, _ = tick(world, None, config)
    for _ in range(ticks):
        world.tick_clock(1000)
        _, cursor, _ = tick(world, cursor, config)
    return cursor


@pytest.mark.parametrize(
    ("order", "quiet_requests"),
    [("newest_first", 2), ("oldest_first", 2), ("unordered", 1 + 8)],
)
def test_quiet_tick_cost_and_a_session_born_and_ended_between_ticks(order, quiet_requests):
    world = _world(order, 3000)
    # Sessions are a millisecond apart here: the look-back window holds 50 of them.
    config = TrackerConfig(lookback_ms=50)
    cursor = _settle(world, config)
    assert TrackerState.from_cursor(cursor).order == order
    world.tick_clock(1000)
    quiet, cursor, collected = tick(world, cursor, config)
    assert quiet.events == [] and collected.requests <= quiet_requests
    # A session born and ended between two ticks is reported, once, within the bound:
    # the next tick when the order is known, within two passes when it is not.
    flash = world.new_session("CREATING")
    world.set_status(flash, "ERROR")
    pages = math.ceil(world_terminal(world) / 100)
    bound = 1 if order != "unordered" else 2 * math.ceil(pages / 8) + 1
    seen, ticks = [], 0
    while (EventKind.SESSION_ERROR, flash, None) not in seen and ticks < bound + 3:
        world.tick_clock(1000)
        outcome, cursor, _ = tick(world, cursor, config)
        seen += kinds(outcome)
        ticks += 1
    assert seen.count((EventKind.SESSION_ERROR, flash, None)) == 1
    assert ticks <= bound


def world_terminal(world) -> int:
    return sum(1 for s in world.sessions.values() if s.status in ("STOPPED", "ERROR", "EXPIRED"))


def test_oldest_first_tail_rejected_recovers_with_a_full_pass_and_loses_nothing():
    world = _world("oldest_first", 450)
    config = TrackerConfig(lookback_ms=100)
    cursor = _settle(world, config, ticks=5)
    state = TrackerState.from_cursor(cursor)
    assert state.order is ListOrder.OLDEST_FIRST and state.tail is not None
    # The item the tail resumes after disappears (retention): the API refuses the cursor.
    del world.sessions[state.tail.after]
    flash = world.new_session("CREATING")
    world.set_status(flash, "EXPIRED")
    seen = []
    for _ in range(4):
        world.tick_clock(1000)
        outcome, cursor, _ = tick(world, cursor, config)
        seen += kinds(outcome)
    assert seen.count((EventKind.SESSION_EXPIRED, flash, None)) == 1
    assert TrackerState.from_cursor(cursor).order is ListOrder.OLDEST_FIRST
    world.tick_clock(1000)
    quiet, cursor, collected = tick(world, cursor, config)
    assert quiet.events == [] and collected.requests == 2


def test_an_order_that_changes_is_noticed_and_verified_again():
    world = _world("newest_first", 450)
    config = TrackerConfig(lookback_ms=100)
    cursor = _settle(world, config, ticks=5)
    world.order = "oldest_first"
    flash = world.new_session("CREATING")
    world.set_status(flash, "STOPPED")
    seen = []
    for _ in range(6):
        world.tick_clock(1000)
        outcome, cursor, _ = tick(world, cursor, config)
        seen += kinds(outcome)
    assert seen.count((EventKind.SESSION_STOPPED, flash, None)) == 1
    assert TrackerState.from_cursor(cursor).order is ListOrder.OLDEST_FIRST
