"""The event core through API drift (issue #8): sessions in statuses this library does not
know, cheap re-checks of pending registrations, status-only sensors without checkpoint state,
and cursors from the previous release."""

from rl_sessions_dagster.core import EventKind, TrackerState, advance
from rl_sessions_dagster.core.events import CHECKPOINT_EVENTS, TERMINAL_EVENTS, TrackerConfig
from rl_sessions_dagster.core.reading import collect

from .test_tracker import kinds, tick
from .world_model import FakeWorld

PAUSED = "PAUSED"  # sent as TRAINING_SESSION_STATUS_PAUSED, a status this library never knew


def test_unknown_status_at_first_tick_then_terminal_gives_exactly_one_event():
    world = FakeWorld(page_size=2)
    paused = world.new_session("RUNNING")
    world.add_checkpoint(paused, registered=True)
    world.set_status(paused, PAUSED)
    for _ in range(5):  # noise around it, so discovery spans pages
        world.new_session("RUNNING")
    world.tick_clock(10)
    config = TrackerConfig()
    first, cursor, _ = tick(world, None, config)
    assert first.events == []
    state = TrackerState.from_cursor(cursor)
    assert paused in state.tracked
    assert state.extra_active == ["TRAINING_SESSION_STATUS_PAUSED"]
    assert state.discovery is None  # the pass finished within the first tick
    world.tick_clock(1000)
    world.set_status(paused, "EXPIRED")
    seen = []
    for _ in range(3):
        outcome, cursor, _ = tick(world, cursor, config)
        seen += kinds(outcome)
        world.tick_clock(1000)
    assert seen.count((EventKind.SESSION_EXPIRED, paused, None)) == 1
    assert not [k for k in seen if k[0] in (EventKind.CHECKPOINT_CREATED,)]


def test_unknown_status_back_to_running_announces_no_history_but_new_checkpoints():
    world = FakeWorld(page_size=3)
    paused = world.new_session("RUNNING")
    old = world.add_checkpoint(paused, registered=True)
    world.set_status(paused, PAUSED)
    world.tick_clock(10)
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    world.set_status(paused, "RUNNING")
    outcome, cursor, _ = tick(world, cursor, config)
    assert [k for k in kinds(outcome) if k[2] == old] == []
    world.tick_clock(1000)
    new = world.add_checkpoint(paused, registered=True)
    outcome, cursor, _ = tick(world, cursor, config)
    assert kinds(outcome) == [
        (EventKind.CHECKPOINT_CREATED, paused, new),
        (EventKind.CHECKPOINT_REGISTERED, paused, new),
    ]


def test_a_new_unknown_status_seen_later_joins_the_active_filter_and_finds_its_peers():
    world = FakeWorld(page_size=2)
    watched = world.new_session("RUNNING")
    world.tick_clock(10)
    config = TrackerConfig()
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    world.set_status(watched, "SUSPENDED")
    outcome, cursor, _ = tick(world, cursor, config)
    assert any("SUSPENDED" in n for n in outcome.notes)
    state = TrackerState.from_cursor(cursor)
    assert "TRAINING_SESSION_STATUS_SUSPENDED" in state.extra_active
    # The next tick lists the watched session with the active list: no fetch by id.
    world.tick_clock(1000)
    _, cursor, collected = tick(world, cursor, config)
    assert collected.fetched_ids == []


def test_status_only_sensor_keeps_no_checkpoint_state():
    world = FakeWorld(page_size=10)
    sid = world.new_session("RUNNING")
    world.add_checkpoint(sid, registered=False)
    world.tick_clock(10)
    config = TrackerConfig(kinds=TERMINAL_EVENTS)
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    world.add_checkpoint(sid, registered=False)
    world.set_status(sid, "STOPPED")
    outcome, cursor, _ = tick(world, cursor, config)
    assert kinds(outcome) == [(EventKind.SESSION_STOPPED, sid, None)]
    state = TrackerState.from_cursor(cursor)
    assert all(t.mark is None and not t.pending for t in state.tracked.values())
    assert sid not in state.tracked  # retired at once: nothing to wait for


def test_pending_registrations_of_finished_sessions_cost_one_request_whatever_their_number():
    world = FakeWorld(page_size=100)
    for _ in range(300):  # history
        world.set_status(world.new_session("RUNNING"), "STOPPED")
        world.tick_clock(1)
    sweep = [world.new_session("RUNNING") for _ in range(50)]
    world.tick_clock(10)
    config = TrackerConfig(lookback_ms=100)
    _, cursor, _ = tick(world, None, config)
    world.tick_clock(1000)
    pending = {sid: world.add_checkpoint(sid, registered=False) for sid in sweep}
    for sid in sweep:
        world.set_status(sid, "STOPPED")
    for _ in range(3):  # created + stopped events, then the order is verified
        world.tick_clock(1000)
        _, cursor, _ = tick(world, cursor, config)
    state = TrackerState.from_cursor(cursor)
    assert len([t for t in state.tracked.values() if t.lingering]) == 50
    # While the sweep is among the newest finished sessions, the scan's one page shows them.
    world.tick_clock(1000)
    quiet, cursor, collected = tick(world, cursor, config)
    assert quiet.events == [] and collected.requests == 2
    # Later sessions push the sweep out of the scan's first page.
    for _ in range(150):
        world.set_status(world.new_session("RUNNING"), "ERROR")
        world.tick_clock(1)
    for _ in range(4):
        world.tick_clock(1000)
        _, cursor, collected = tick(world, cursor, config)
    quiet, cursor, collected = tick(world, cursor, config)
    assert quiet.events == []
    # active list + finished-session page + one page of the checkpoint list, no GET per session
    assert collected.requests == 3
    assert collected.fetched_ids == []
    # A registration is found (through the lists, or by fetching only its session) and
    # announced once.
    target = sweep[7]
    next(c for c in world.sessions[target].checkpoints if c.id == pending[target]).registered = True
    world.tick_clock(1000)
    outcome, cursor, collected = tick(world, cursor, config)
    assert kinds(outcome) == [(EventKind.CHECKPOINT_REGISTERED, target, pending[target])]
    assert set(collected.fetched_ids) <= {target} and collected.requests <= 4


def test_checkpoint_sensor_finds_a_session_born_and_ended_between_ticks_in_two_requests():
    world = FakeWorld(page_size=100)
    for _ in range(300):
        world.set_status(world.new_session("RUNNING"), "STOPPED")
        world.tick_clock(1)
    world.new_session("RUNNING")
    config = TrackerConfig(kinds=CHECKPOINT_EVENTS)
    _, cursor, _ = tick(world, None, config)
    for _ in range(3):
        world.tick_clock(1000)
        _, cursor, collected = tick(world, cursor, config)
    assert collected.requests == 2  # active list + one page of the checkpoint list
    flash = world.new_session("RUNNING")
    c = world.add_checkpoint(flash, registered=True)
    world.set_status(flash, "STOPPED")
    world.tick_clock(1000)
    outcome, cursor, collected = tick(world, cursor, config)
    assert kinds(outcome) == [
        (EventKind.CHECKPOINT_CREATED, flash, c),
        (EventKind.CHECKPOINT_REGISTERED, flash, c),
    ]
    assert collected.fetched_ids == [flash]
    for _ in range(3):  # never again
        world.tick_clock(1000)
        outcome, cursor, collected = tick(world, cursor, config)
        assert outcome.events == [] and collected.requests == 2


def test_a_refused_discovery_position_starts_the_pass_over_instead_of_stalling():
    world = FakeWorld(page_size=2)
    ids = [world.new_session("RUNNING") for _ in range(5)]
    world.tick_clock(10)
    config = TrackerConfig()

    def tick_one_page(cursor):
        state = TrackerState.from_cursor(cursor)
        got = collect(state, config, world, now_ms=world.clock_ms, discovery_pages_per_tick=1)
        outcome = advance(state, got.observation, config)
        return outcome, outcome.state.to_cursor()

    _, cursor = tick_one_page(None)
    world.tick_clock(1000)
    world.set_status(ids[0], "PAUSED")  # a new unknown status starts a discovery pass
    _, cursor = tick_one_page(cursor)
    world.tick_clock(1000)
    _, cursor = tick_one_page(cursor)  # its first page
    held = TrackerState.from_cursor(cursor).discovery
    assert held is not None and held.after is not None
    del world.sessions[held.after]  # the item the saved position names is gone
    world.tick_clock(1000)
    outcome, cursor = tick_one_page(cursor)
    assert any("discovery starts over" in n for n in outcome.notes)
    for _ in range(4):
        world.tick_clock(1000)
        _, cursor = tick_one_page(cursor)
    assert TrackerState.from_cursor(cursor).discovery is None  # the pass completed
