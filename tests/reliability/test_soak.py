"""Soak: hundreds of sensor ticks against a simulated account that keeps changing, with about
one request in five failing (429 + Retry-After, 5xx, dropped connections, timeouts, truncated
JSON). Once the world settles and the faults are cleared, every real event must have produced
exactly one RunRequest over all ticks, and no RunRequest may name something that did not happen.

The world runs on a manual clock (the simulator's ``Date`` header follows it), so every
``created_at``/``updated_at`` is decided by the test, not by how fast the machine is.
"""

import random
from collections import Counter

import pytest

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    PollingOptions,
    build_session_sensor,
)
from rl_sessions_dagster.core.events import TERMINAL_EVENTS
from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

from .conftest import API_KEY, RecordingTicker, evaluation_job, make_defs, report_job
from .soak_world import (
    KNOWN_ACTIVE,
    TERMINAL_KIND,
    UNKNOWN_STATUSES,
    ChangingWorld,
    add_fault_mix,
    assert_exactly_once,
    expected_events,
)

# Hundreds of ticks: minutes on a loaded machine, so a larger per-test ceiling than the global one.
pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.timeout(900)]

CKPT = "together_rl_checkpoint_sensor"
STATUS = "together_rl_session_status_sensor"
ALL = "every_event_kind"


def run_soak(instance, *, order: str, rounds: int, seed: int) -> dict:
    world = SimulatedWorld(
        seed=seed, clock="manual", list_order=order, session_start_delay=1.0, session_stop_delay=2.0
    )
    cw = ChangingWorld(world, random.Random(seed))
    with RLSimulator(api_key=API_KEY, world=world, seed=seed) as sim:
        # History before the sensors start: finished sessions and running ones with checkpoints.
        for _ in range(6):
            cw.new_session()
        for s in world.sessions("RUNNING"):
            cw.checkpoint(s["id"], registered=True)
        world.stop_session(world.sessions("RUNNING")[0]["id"], immediate=True)
        world.advance_clock(3)
        cw.observe()

        sensors = [
            build_session_sensor(
                name="together_rl_checkpoint_sensor",
                routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
            ),
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            ),
            build_session_sensor(
                name=ALL,
                routes=[EventRoute(list(EventKind), job=report_job, partitions_def=None)],
                options=PollingOptions(max_runs_per_tick=12, page_size=5),
            ),
        ]
        defs = make_defs(sim.base_url, sensors)
        tickers = {name: RecordingTicker(defs, name, instance) for name in (CKPT, STATUS, ALL)}
        before = set(cw.checkpoints)
        terminal_before = {s["id"] for s in world.sessions() if s["status"] in TERMINAL_KIND}
        for t in tickers.values():
            assert t.tick().run_requests == []  # first tick: baseline, history is not announced

        add_fault_mix(sim)
        rng = random.Random(seed + 1)
        for _ in range(rounds):
            cw.step()
            for t in rng.sample(list(tickers.values()), k=3):
                if rng.random() < 0.9:  # now and then a sensor misses a round
                    t.tick(raise_errors=False)
        fault_kinds = sim.requests.fault_counts()
        faulted = sum(fault_kinds.values())
        total = len(sim.requests)

        # Settle: the world ends, faults stop, sensors tick until three quiet ticks in a row.
        sim.faults.clear()
        cw.settle()
        for t in tickers.values():
            quiet = 0
            for _ in range(60):
                data = t.tick()
                quiet = 0 if data.run_requests else quiet + 1
                if quiet == 3:
                    break
            assert quiet == 3, f"{t.sensor.name} never went quiet"

    errors = {name: [repr(e) for e in t.errors] for name, t in tickers.items() if t.errors}
    assert not errors, f"ticks raised instead of skipping: {errors}"
    slowest = max(rec.seconds for t in tickers.values() for rec in t.records)
    assert slowest < 40 + 5, f"a tick took {slowest:.1f} s (budget 40 s)"

    created, registered, terminal = expected_events(cw, before, terminal_before)
    # The soak did exercise what it claims to.
    assert registered and created != registered
    assert {k.split(":")[0] for k in terminal} == set(TERMINAL_KIND.values())
    assert cw.never_registered and cw.actions["late registration"] and cw.actions["born failed"]
    assert set(fault_kinds) >= {"status:429", "status:503", "drop", "malformed", "delay:0.8"}
    assert_exactly_once(tickers[CKPT], registered)
    assert_exactly_once(tickers[STATUS], terminal)

    # The all-kinds sensor: every checkpoint/terminal fact exactly once; generic status changes
    # (which depend on what a tick happened to see) unique and real.
    everything = tickers[ALL]
    generic = [
        r for r in everything.run_requests if r.run_key.startswith("session_status_changed:")
    ]
    for r in generic:
        _, sid, raw_at = r.run_key.split(":", 2)
        raw = raw_at.rsplit("@", 1)[0]
        assert raw in cw.statuses.get(sid, set()), f"invented status change {r.run_key}"
        assert raw in KNOWN_ACTIVE | set(UNKNOWN_STATUSES)
    keys = [
        r.run_key
        for r in everything.run_requests
        if not r.run_key.startswith("session_status_changed:")
    ]
    assert len(keys) == len(set(keys)), Counter(k for k in keys if keys.count(k) > 1)
    assert len(generic) == len({r.run_key for r in generic})
    assert set(keys) == created | registered | terminal
    assert any(r.tags["together/session_status"] in UNKNOWN_STATUSES for r in generic)

    # Run requests carry what they claim: partition = checkpoint, tags match the world.
    for r in tickers[CKPT].run_requests:
        cid = r.tags["together/checkpoint_id"]
        assert (
            r.partition_key.endswith(f"/{cid[:8]}")
            and r.tags["together/session_id"] == cw.checkpoints[cid]
        )

    ticks = sum(len(t.records) for t in tickers.values())
    failed = sum(
        1
        for t in tickers.values()
        for rec in t.records
        if rec.data is not None and rec.data.skip_message and "unavailable" in rec.data.skip_message
    )
    return {
        "ticks": ticks,
        "skipped_for_faults": failed,
        "requests": total,
        "faulted": faulted,
        "events": len(created | registered | terminal) + len(generic),
        "actions": dict(cw.actions),
    }


def test_soak_newest_first_list(instance, shared_ssl_context, small_jitter):
    stats = run_soak(instance, order="newest_first", rounds=200, seed=2024)
    assert stats["ticks"] >= 500
    assert 0.12 < stats["faulted"] / stats["requests"] < 0.3, stats
    assert stats["skipped_for_faults"] > 0
    print(stats)


def test_soak_oldest_first_list(instance, shared_ssl_context, small_jitter):
    stats = run_soak(instance, order="oldest_first", rounds=200, seed=2024)
    assert stats["ticks"] >= 150
    assert 0.12 < stats["faulted"] / stats["requests"] < 0.3, stats
    print(stats)


def test_soak_unordered_list(instance, shared_ssl_context, small_jitter):
    stats = run_soak(instance, order="unordered", rounds=70, seed=7)
    assert stats["ticks"] >= 150
    assert 0.12 < stats["faulted"] / stats["requests"] < 0.3, stats
    print(stats)


def test_slow_api_needs_several_ticks_each_within_budget_and_loses_nothing(instance):
    """Every list and get takes 2 s; a 9 s tick budget leaves room for about two reads after
    the active list (and, once, for the active list asked with the unknown status, which this
    simulator refuses as a filter value), so the work is spread over ticks and every tick
    keeps its progress."""
    world = SimulatedWorld(seed=5, clock="manual")
    with RLSimulator(api_key=API_KEY, world=world, seed=5) as sim:
        running, paused, stopped, failed = (world.create_session() for _ in range(4))
        world.advance_clock(2)
        budget = 9.0
        sensor = build_session_sensor(name="slow", routes=[EventRoute(list(EventKind), job=report_job, partitions_def=None)], options=PollingOptions(tick_budget_seconds=budget, page_size=2))  # fmt: skip
        t = RecordingTicker(
            make_defs(sim.base_url, [sensor], request_timeout=10.0), "slow", instance
        )
        assert t.tick().run_requests == []  # baseline, at full speed

        world.advance_clock(2)
        world.advance_steps(running, 5)
        ckpt = world.add_inference_checkpoint(running)
        world.set_status(paused, UNKNOWN_STATUSES[0])  # in neither list: must be fetched by id
        world.stop_session(stopped, immediate=True)
        world.fail_session(failed)
        born_failed = [world.create_session(fail_at_creation=True) for _ in range(4)]
        world.advance_clock(2)
        expected = {
            f"checkpoint_created:{running}:{ckpt}",
            f"checkpoint_registered:{running}:{ckpt}",
            f"session_stopped:{stopped}",
            f"session_error:{failed}",
            *(f"session_error:{s}" for s in born_failed),
        }
        sim.faults.add("GET /v1/rl/training-sessions*", delay_s=2.0)
        seen: list[str] = []
        cursors = [t.cursor]
        for _ in range(6):
            data = t.tick()
            seen += [r.run_key for r in data.run_requests]
            cursors.append(t.cursor)
            if expected <= set(seen) and any(k.startswith("session_status_changed:") for k in seen):
                break
        reads = sim.requests.records()

    ticks = t.records[1:]
    assert len(ticks) >= 2, "the budget was meant to spread the work over several ticks"
    assert all(rec.seconds <= budget + 5 for rec in ticks), [rec.seconds for rec in ticks]
    assert all(rec.data.run_requests for rec in ticks), "a tick made no progress"
    assert len(set(cursors)) == len(cursors), "the cursor did not advance on every tick"
    assert len(seen) == len(set(seen)), Counter(seen)
    generic = [k for k in seen if k.startswith("session_status_changed:")]
    assert generic == [
        f"session_status_changed:{paused}:{UNKNOWN_STATUSES[0]}@" + generic[0].split("@")[1]
    ]
    assert set(seen) - set(generic) == expected
    assert any(r.template == "/v1/rl/training-sessions/{id}" for r in reads)
    delayed = [r for r in reads if r.fault == "delay:2"]
    assert delayed and all(r.duration_s >= 2.0 for r in delayed)
