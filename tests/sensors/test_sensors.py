"""Sensor tests: real DagsterInstance, evaluate_tick as the daemon runs it, and the simulator
over HTTP on 127.0.0.1."""

import json

import dagster as dg
import pytest

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    PollingOptions,
    SessionFilter,
    build_session_sensor,
)
from rl_sessions_dagster.api.errors import AuthenticationError
from rl_sessions_dagster.core import TrackerState
from rl_sessions_dagster.core.events import TERMINAL_EVENTS
from rl_sessions_dagster.core.state import CURSOR_VERSION

from .conftest import API_KEY, evaluation_job, make_defs, report_job

CKPT = "together_rl_checkpoint_sensor"
STATUS = "together_rl_session_status_sensor"


def keys(data):
    return [r.run_key for r in data.run_requests]


def test_checkpoint_sensor_announces_each_registered_checkpoint_once(sim, ticker):
    world = sim.world
    history = world.create_session(display_name="old-run")
    world.add_inference_checkpoint(history)
    sid = world.create_session(
        display_name="gsm8k-a", wandb={"project": "grpo", "url": "https://wandb.ai/x/y/runs/1"}
    )
    world.advance_clock(2)
    t = ticker(make_defs(sim), CKPT)
    first = t.tick()
    assert first.run_requests == [] and "0 run(s)" in first.skip_message

    world.advance_clock(5)
    world.advance_steps(sid, 10)
    c1 = world.add_inference_checkpoint(sid)
    world.advance_clock(5)
    world.advance_steps(sid, 10)
    c2 = world.add_inference_checkpoint(sid)
    data = t.tick()
    assert keys(data) == [f"checkpoint_registered:{sid}:{c1}", f"checkpoint_registered:{sid}:{c2}"]
    r1 = data.run_requests[0]
    assert r1.partition_key == f"gsm8k-a/000010/{c1[:8]}"
    assert r1.tags["together/event"] == "checkpoint_registered"
    assert r1.tags["together/session_id"] == sid
    assert r1.tags["together/checkpoint_id"] == c1
    assert r1.tags["together/step"] == "10"
    assert r1.tags["together/display_name"] == "gsm8k-a"
    assert "together/base_model" in r1.tags
    (add,) = data.dynamic_partitions_requests
    assert list(add.partition_keys) == [f"gsm8k-a/000010/{c1[:8]}", f"gsm8k-a/000020/{c2[:8]}"]
    mats = [e for e in data.asset_events if isinstance(e, dg.AssetMaterialization)]
    assert [m.partition for m in mats] == list(add.partition_keys)
    assert mats[0].metadata["checkpoint_id"] == dg.MetadataValue.text(c1)
    assert mats[0].metadata["wandb_url"] == dg.MetadataValue.url("https://wandb.ai/x/y/runs/1")
    assert mats[0].metadata["step"] == dg.MetadataValue.int(10)

    again = t.tick()
    assert again.run_requests == []


def test_status_sensor_one_run_per_finished_session_including_born_failed(sim, ticker):
    world = sim.world
    rid = world.create_model_resource(inactive_timeout=600)
    a = world.create_session(rid, display_name="a")
    b = world.create_session(rid, display_name="b")
    c = world.create_session(world.create_model_resource(inactive_timeout=600), display_name="c")
    world.advance_clock(2)
    t = ticker(make_defs(sim), STATUS)
    assert t.tick().run_requests == []
    world.advance_clock(2)
    world.stop_session(a, immediate=True)
    world.fail_session(b, message="boom")
    born_failed = world.create_session(rid, fail_at_creation=True)
    world.expire_resource(world.session(c)["model_resources_id"])
    data = t.tick()
    got = {r.run_key: r.tags for r in data.run_requests}
    assert set(got) == {
        f"session_stopped:{a}",
        f"session_error:{b}",
        f"session_expired:{c}",
        f"session_error:{born_failed}",
    }
    assert got[f"session_error:{b}"]["together/event"] == "session_error"
    assert all(r.partition_key is None for r in data.run_requests)
    assert t.tick().run_requests == []


@pytest.mark.parametrize("shape", ["current", "object_ids", "legacy"])
def test_every_registration_shape_and_int64_strings(sim, ticker, shape):
    sid = sim.world.create_session(registration_shape=shape, int64_as_string=True)
    t = ticker(make_defs(sim), CKPT)
    t.tick()
    sim.world.advance_clock(1)
    sim.world.advance_steps(sid, 7)
    cid = sim.world.add_inference_checkpoint(sid)
    data = t.tick()
    assert keys(data) == [f"checkpoint_registered:{sid}:{cid}"]
    assert data.run_requests[0].tags["together/step"] == "7"


def test_unregistered_checkpoint_waits_for_registration(sim, ticker):
    sid = sim.world.create_session()
    t = ticker(make_defs(sim), CKPT)
    t.tick()
    sim.world.advance_clock(1)
    cid = sim.world.add_inference_checkpoint(sid, registered=False)
    assert t.tick().run_requests == []
    sim.world.stop_session(sid, immediate=True)
    assert t.tick().run_requests == []  # finished, but still lingering for registration
    sim.world.register_checkpoint(cid)
    assert keys(t.tick()) == [f"checkpoint_registered:{sid}:{cid}"]
    assert TrackerState.from_cursor(t.cursor).tracked == {}


def test_first_tick_backfill_and_cap_follow_in_order(sim, ticker):
    sid = sim.world.create_session()
    ckpts = []
    for _ in range(5):
        sim.world.advance_clock(1)
        sim.world.advance_steps(sid, 1)
        ckpts.append(sim.world.add_inference_checkpoint(sid))
    sensor = build_session_sensor(
        name="backfill",
        routes=[
            EventRoute([EventKind.CHECKPOINT_CREATED], job=evaluation_job, partitions_def=None)
        ],
        options=PollingOptions(backfill=True, max_runs_per_tick=2),
    )
    t = ticker(make_defs(sim, sensor), "backfill")
    seen = []
    for _ in range(4):
        data = t.tick()
        assert len(data.run_requests) <= 2
        seen += [r.tags["together/checkpoint_id"] for r in data.run_requests]
    assert seen == ckpts


def test_filters_by_display_name_and_wandb_project(sim, ticker):
    wanted = sim.world.create_session(display_name="sweep-1", wandb={"project": "p"})
    other = sim.world.create_session(display_name="sweep-2", wandb={"project": "q"})
    sensor = build_session_sensor(
        name="filtered",
        routes=[EventRoute([EventKind.SESSION_STOPPED], job=report_job)],
        session_filter=SessionFilter(display_name="sweep-*", wandb_project="p"),
    )
    t = ticker(make_defs(sim, sensor), "filtered")
    t.tick()
    sim.world.stop_session(wanted, immediate=True)
    sim.world.stop_session(other, immediate=True)
    assert keys(t.tick()) == [f"session_stopped:{wanted}"]


def test_unknown_status_is_a_generic_change_and_the_tick_goes_on(sim, ticker):
    sid = sim.world.create_session()
    sensor = build_session_sensor(
        name="all", routes=[EventRoute(list(EventKind), job=report_job, partitions_def=None)]
    )
    t = ticker(make_defs(sim, sensor), "all")
    t.tick()
    sim.world.advance_clock(1)
    sim.world.set_status(sid, "TRAINING_SESSION_STATUS_PAUSED")
    data = t.tick()
    assert [r.tags["together/event"] for r in data.run_requests] == ["session_status_changed"]
    assert data.run_requests[0].tags["together/session_status"] == "TRAINING_SESSION_STATUS_PAUSED"
    sim.world.advance_clock(1)
    sim.world.stop_session(sid, immediate=True)
    assert keys(t.tick()) == [f"session_stopped:{sid}"]


def test_transient_failure_skips_the_tick_and_keeps_the_cursor(sim, ticker):
    sid = sim.world.create_session()
    t = ticker(make_defs(sim), STATUS)
    t.tick()
    cursor = t.cursor
    sim.world.stop_session(sid, immediate=True)
    sim.faults.add("GET /v1/rl/training-sessions", status=503, times=10)
    data = t.tick()
    assert data.run_requests == []
    assert "unavailable" in data.skip_message and API_KEY not in data.skip_message
    # The tracker's state is kept; the cursor only remembers since when reads fail.
    kept = TrackerState.from_cursor(t.cursor)
    assert kept.failing_since_ms is not None
    kept.failing_since_ms = None
    assert kept == TrackerState.from_cursor(cursor)
    sim.faults.clear()
    assert keys(t.tick()) == [f"session_stopped:{sid}"]
    assert TrackerState.from_cursor(t.cursor).failing_since_ms is None


def test_an_outage_that_persists_fails_a_tick_loudly_and_loses_nothing(sim, ticker):
    sid = sim.world.create_session()
    sensor = build_session_sensor(
        name="together_rl_session_status_sensor",
        routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
        options=PollingOptions(unavailable_alarm_seconds=600),
    )
    t = ticker(make_defs(sim, sensor), sensor.name)
    t.tick()
    sim.world.stop_session(sid, immediate=True)
    sim.faults.add("GET /v1/rl/training-sessions", status=503, times=1000)
    assert "unavailable" in t.tick().skip_message  # the first failing tick only skips
    # Eleven minutes of failing ticks later (the cursor says since when):
    state = TrackerState.from_cursor(t.cursor)
    state.failing_since_ms = (state.failing_since_ms or 0) - 11 * 60 * 1000
    t.cursor = state.to_cursor()
    with pytest.raises(Exception, match="unavailable for 11 min") as info:
        t.tick()
    assert API_KEY not in str(info.value) and "base_url" in str(info.value)
    sim.faults.clear()
    assert keys(t.tick()) == [f"session_stopped:{sid}"]


def test_wrong_key_fails_loudly_after_one_request(sim, ticker):
    t = ticker(make_defs(sim, api_key="sk-wrong"), STATUS)
    sim.requests.reset()
    with pytest.raises(Exception) as info:
        t.tick()
    assert isinstance(info.value, AuthenticationError) or "401" in str(info.value)
    assert sim.requests.count() == 1
    assert "sk-wrong" not in str(info.value)


@pytest.mark.parametrize("api_key", [None, dg.EnvVar("TOGETHER_API_KEY")])
def test_missing_key_names_the_environment_variable(sim, ticker, monkeypatch, api_key):
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    t = ticker(make_defs(sim, api_key=api_key), STATUS)
    sim.requests.reset()
    with pytest.raises(Exception, match="TOGETHER_API_KEY"):
        t.tick()
    assert sim.requests.count() == 0


def test_unreadable_cursor_is_reset_without_flood(sim, ticker):
    sid = sim.world.create_session()
    sim.world.add_inference_checkpoint(sid)
    t = ticker(make_defs(sim), CKPT)
    t.cursor = '{"v": 0, "garbage": true}'
    data = t.tick()
    assert data.run_requests == []
    assert json.loads(t.cursor)["v"] == CURSOR_VERSION


def test_slow_api_tick_stays_within_budget_and_progress_is_kept(sim, ticker):
    sids = [sim.world.create_session() for _ in range(3)]
    sensor = build_session_sensor(
        name="slow",
        routes=[EventRoute([EventKind.SESSION_STOPPED], job=report_job)],
        options=PollingOptions(tick_budget_seconds=1.5, page_size=1),
    )
    t = ticker(make_defs(sim, sensor), "slow")
    t.tick()
    for sid in sids:
        sim.world.stop_session(sid, immediate=True)
    sim.faults.add("/v1/rl/training-sessions*", delay_s=0.4)
    seen = set()
    for _ in range(12):
        seen |= set(keys(t.tick()))
        if len(seen) == 3:
            break
    assert seen == {f"session_stopped:{s}" for s in sids}


def test_secret_never_in_cursor_tags_or_messages(sim, ticker):
    sid = sim.world.create_session(display_name="x")
    t = ticker(make_defs(sim), CKPT)
    t.tick()
    sim.world.advance_clock(1)
    sim.world.add_inference_checkpoint(sid)
    data = t.tick()
    blob = json.dumps(
        [
            t.cursor,
            [r.tags for r in data.run_requests],
            [str(e) for e in data.asset_events],
            data.skip_message,
        ]
    )
    assert data.run_requests and API_KEY not in blob
    assert API_KEY not in repr(make_defs(sim).resources["together"])


@pytest.mark.slow  # populates 10,000 sessions
def test_steady_state_tick_at_ten_thousand_sessions_makes_a_handful_of_requests(sim, ticker):
    stats = sim.world.populate(n_sessions=10_000, checkpoints_per_session=10, active=50, seed=3)
    assert stats["sessions"] == 10_000
    t = ticker(make_defs(sim), STATUS)
    t.tick()  # first tick: baseline
    t.tick()  # first pass: scans the whole finished list once to verify its order
    assert TrackerState.from_cursor(t.cursor).order == "newest_first"
    sim.world.advance_clock(30)
    sim.requests.reset()
    data = t.tick()
    assert data.run_requests == []
    assert sim.requests.count() <= 3
    assert len(t.cursor) < 4096
    # ...and it still sees a session that is born and fails between two ticks.
    sim.world.advance_clock(30)
    born = sim.world.create_session(fail_at_creation=True)
    assert keys(t.tick()) == [f"session_error:{born}"]


def test_manual_clock_world_uses_the_simulators_date_header(ticker):
    from datetime import UTC, datetime

    from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

    world = SimulatedWorld(clock="manual", start=datetime(2026, 1, 2, tzinfo=UTC))
    with RLSimulator(api_key=API_KEY, world=world) as sim:
        sid = world.create_session()
        world.advance_clock(5)
        t = ticker(make_defs(sim), CKPT)
        t.tick()
        status = ticker(make_defs(sim), STATUS)
        status.tick()
        world.advance_clock(5)
        cid = world.add_inference_checkpoint(sid)
        born = world.create_session(fail_at_creation=True)
        assert keys(t.tick()) == [f"checkpoint_registered:{sid}:{cid}"]
        # Only right if "history" is judged by the simulator's clock, not this machine's.
        assert keys(status.tick()) == [f"session_error:{born}"]


def test_malformed_items_are_skipped_named_and_block_nothing(sim, ticker):
    world = sim.world
    sessions = [world.create_session(display_name=f"drift-{i}") for i in range(3)]
    t = ticker(make_defs(sim), CKPT)
    t.tick()
    bad = sessions[1]
    world.mutate_session_json(bad, extra={"id": 987654})  # a wrong type in a required field
    good = [world.add_inference_checkpoint(sid) for sid in (sessions[0], sessions[2])]
    data = t.tick()
    assert sorted(r.tags["together/checkpoint_id"] for r in data.run_requests) == sorted(good)
    # Unreadable in the list and when fetched by id: skipped, counted, retried.
    world.add_inference_checkpoint(bad)
    data = t.tick()
    assert data.run_requests == [] and "unreadable item(s) skipped" in (data.skip_message or "")
    world.mutate_session_json(bad)  # the API is fixed: the session is read again
    data = t.tick()
    assert len(data.run_requests) == 1
    assert data.run_requests[0].tags["together/session_id"] == bad


def test_unknown_status_at_the_first_tick_then_terminal_is_one_run(sim, ticker):
    world = sim.world
    sid = world.create_session(display_name="paused-at-start")
    history = world.add_inference_checkpoint(sid)
    world.set_status(sid, "TRAINING_SESSION_STATUS_PAUSED")
    status = ticker(make_defs(sim), STATUS)
    ckpt = ticker(make_defs(sim), CKPT)
    assert status.tick().run_requests == [] and ckpt.tick().run_requests == []
    world.set_status(sid, "RUNNING")
    new = world.add_inference_checkpoint(sid)
    world.set_status(sid, "TRAINING_SESSION_STATUS_EXPIRED")
    for _ in range(2):
        status.tick()
        ckpt.tick()
    assert status.run_keys() == [f"session_expired:{sid}"]
    assert ckpt.run_keys() == [f"checkpoint_registered:{sid}:{new}"]
    assert history not in " ".join(ckpt.run_keys())
