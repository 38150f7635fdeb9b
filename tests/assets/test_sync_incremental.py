"""The incremental sync: a quiet run costs at most 3 requests at any history size, a run after
changes inside the window leaves the table equal row for row to a fresh full walk (in every list
order the simulator serves, with faults), and the reconciliation brings in the rest. A run that
fails half-way keeps its rows, saves no state, and the next run completes it."""

import random
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.assets.schedules import reconcile_schedule, table_job_and_schedule
from rl_sessions_dagster.storage import SQLAlchemyTableStore
from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.simulator.lifecycle import LIST_ORDERS

from .sync_support import KEY, fresh_walk, live_rows, run_once

API_KEY = "sim-key"


def _sim(order: str = "newest_first", seed: int = 3) -> RLSimulator:
    world = SimulatedWorld(seed=seed, clock="manual", list_order=order)
    return RLSimulator(api_key=API_KEY, world=world, seed=seed)


@pytest.mark.parametrize("order", ["newest_first"])
@pytest.mark.parametrize("history", [50, 1_500])
def test_a_quiet_run_makes_at_most_3_requests_at_any_history_size(order: str, history: int) -> None:
    with _sim(order) as sim, SQLAlchemyTableStore(":memory:") as store:
        sim.world.populate(history, 2, active=5)
        first = run_once(sim, store)
        assert first.mode == "full" and first.api_requests == -(-history // 100)
        sim.world.advance_clock(30)
        run_once(sim, store)  # the first incremental run after the walk
        for _ in range(3):
            sim.world.advance_clock(30)
            sim.requests.reset()
            quiet = run_once(sim, store)
            assert quiet.mode == "incremental"
            assert len(sim.requests.records()) == quiet.api_requests <= 3
            assert (quiet.sessions_written + quiet.checkpoints_written).inserted == 0
        assert live_rows(store) == fresh_walk(sim)


def test_changes_land_in_one_run_and_deletions_are_marked(tmp_path: Any) -> None:
    with _sim() as sim, SQLAlchemyTableStore(str(tmp_path / "t.db")) as store:
        w = sim.world
        w.populate(300, 2, active=4)
        running = w.session_ids("RUNNING")
        run_once(sim, store)
        w.advance_clock(60)
        new = w.create_session(display_name="new")
        flash = w.create_session(display_name="flash")
        w.add_inference_checkpoint(flash, registered=False)
        w.stop_session(flash, immediate=True)
        w.fail_session(running[0])
        pending = w.add_inference_checkpoint(running[1], registered=False)
        w.stop_session(running[1], immediate=True)
        w.advance_clock(60)
        run_once(sim, store)
        assert live_rows(store) == fresh_walk(sim)
        w.register_checkpoint(pending)  # after its session ended: still inside the window
        w.advance_clock(60)
        changed = run_once(sim, store)
        assert changed.checkpoints_written.updated == 1
        assert live_rows(store) == fresh_walk(sim) and new in live_rows(store)[0]


def test_outside_the_window_waits_for_the_reconciliation() -> None:
    with _sim() as sim, SQLAlchemyTableStore(":memory:") as store:
        w = sim.world
        w.populate(200, 1, active=2)
        old = w.session_ids("STOPPED")[-1]  # finished long before the first run
        run_once(sim, store)
        w.patch_session(old, display_name="renamed")
        w.advance_clock(60)
        run_once(sim, store)
        assert live_rows(store)[0][old]["display_name"] != "renamed"  # not seen yet
        full = run_once(sim, store, full=True)
        assert full.mode == "full" and full.api_requests >= 2
        assert live_rows(store) == fresh_walk(sim)
        w.advance_clock(60)
        sim.requests.reset()
        assert run_once(sim, store).api_requests <= 3  # the state survived the walk


def test_a_run_failing_half_way_saves_no_state_and_the_next_completes() -> None:
    with _sim() as sim, SQLAlchemyTableStore(":memory:") as store:
        w = sim.world
        w.populate(150, 1, active=3)
        run_once(sim, store)
        saved = store.load_sync_state(KEY)
        for sid in w.session_ids("RUNNING"):
            w.stop_session(sid, immediate=True)
        w.advance_clock(60)
        rule = sim.faults.add("GET /v1/rl/training-sessions/*", status=500, nth=[2])
        with pytest.raises(dg.Failure, match="next run reads the rest"):
            run_once(sim, store)
        assert store.load_sync_state(KEY) == saved
        sim.faults.remove(rule)
        run_once(sim, store)
        assert live_rows(store) == fresh_walk(sim)


def test_reconciliation_schedule_runs_the_sync_job_with_full_true() -> None:
    asset = build_session_sync_asset()
    job, _ = table_job_and_schedule(asset)
    schedule = reconcile_schedule(asset, job)
    assert (schedule.cron_schedule, schedule.job_name) == ("0 4 * * *", job.name)
    with dg.build_schedule_context() as ctx:
        (request,) = schedule.evaluate_tick(ctx).run_requests or []
    assert request.run_config == {"ops": {asset.op.name: {"config": {"full": True}}}}


# --- exactness, over generated histories and changes ------------------------------------------

OPS = st.one_of(
    st.tuples(st.just("new"), st.sampled_from(["RUNNING", "STOPPED", "ERROR"])),
    st.tuples(st.just("stop"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("fail"), st.integers(0, 50)),
    st.tuples(st.just("ckpt"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("register"), st.integers(0, 50)),
    st.tuples(st.just("steps"), st.integers(0, 50), st.integers(1, 5)),
    st.tuples(st.just("clock"), st.integers(1, 120)),
)


def _apply(w: SimulatedWorld, op: tuple[Any, ...], unregistered: list[str]) -> None:
    live = w.session_ids(["RUNNING", "STOPPING"])
    kind = op[0]
    if kind == "new":
        sid = w.create_session(display_name=f"gen-{len(w.session_ids())}")
        if op[1] == "STOPPED":
            w.stop_session(sid, immediate=True)
        elif op[1] == "ERROR":
            w.fail_session(sid)
    elif kind == "clock":
        w.advance_clock(op[1])
    elif kind == "register":
        if unregistered:
            w.register_checkpoint(unregistered.pop(op[1] % len(unregistered)))
    elif live:
        sid = live[op[1] % len(live)]
        if kind == "stop":
            w.stop_session(sid, immediate=op[2])
        elif kind == "fail":
            w.fail_session(sid)
        elif kind == "ckpt":
            cid = w.add_inference_checkpoint(sid, registered=op[2])
            if not op[2]:
                unregistered.append(cid)
        elif kind == "steps":
            w.advance_steps(sid, op[2])


HISTORIES = {
    "history": st.integers(0, 260),
    "active": st.integers(0, 6),
    "rounds": st.lists(st.lists(OPS, max_size=8), min_size=1, max_size=3),
    "fault_at": st.one_of(st.none(), st.integers(1, 6)),
    "renames": st.lists(st.integers(0, 10_000), max_size=3),
    "seed": st.integers(0, 2**16),
}


def _check_exact(
    order: str,
    history: int,
    active: int,
    rounds: list[list[tuple[Any, ...]]],
    fault_at: int | None,
    renames: list[int],
    seed: int,
) -> None:
    with _sim(order, seed) as sim, SQLAlchemyTableStore(":memory:") as store:
        w = sim.world
        w.populate(history, 2, active=min(active, history))
        for _ in range(random.Random(seed).randint(0, 3)):
            w.create_session()  # live sessions without checkpoints yet
        run_once(sim, store)
        assert live_rows(store) == fresh_walk(sim)
        unregistered: list[str] = []
        for ops in rounds:
            for op in ops:
                _apply(w, op, unregistered)
            w.advance_clock(60)
            if fault_at is not None:  # a fault mid-run: rows kept, state not saved
                saved = store.load_sync_state(KEY)
                rule = sim.faults.add(status=503, nth=[fault_at])
                try:
                    run_once(sim, store)
                except Exception:
                    assert store.load_sync_state(KEY) == saved
                sim.faults.remove(rule)
            run_once(sim, store)
            assert live_rows(store) == fresh_walk(sim)
        finished = w.session_ids(["STOPPED", "ERROR", "EXPIRED"])
        for n in renames:  # outside the window: only the reconciliation sees these
            if finished:
                w.patch_session(finished[n % len(finished)], display_name=f"renamed-{n}")
        w.advance_clock(60)
        run_once(sim, store, full=True)
        assert live_rows(store) == fresh_walk(sim)


@pytest.mark.parametrize("order", LIST_ORDERS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**HISTORIES)
def test_an_incremental_run_equals_a_fresh_full_walk(order: str, **history: Any) -> None:
    _check_exact(order, **history)


@pytest.mark.slow
@pytest.mark.parametrize("order", LIST_ORDERS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**HISTORIES)
def test_an_incremental_run_equals_a_fresh_full_walk_many(order: str, **history: Any) -> None:
    _check_exact(order, **history)


def test_metadata_and_run_log_say_the_mode_requests_and_rows(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: Any, tmp_path: Any
) -> None:
    sim.world.populate(120, 1, active=3)
    asset = build_session_sync_asset()
    db = str(tmp_path / "t.db")

    def materialize(**config: Any) -> tuple[dict[str, Any], list[str]]:
        result = dg.materialize(
            [asset],
            instance=instance,
            resources={"together": resource},
            run_config={"ops": {asset.op.name: {"config": {"db_path": db, **config}}}},
        )
        (mat,) = result.asset_materializations_for_node(asset.op.name)
        logs = [e.user_message for e in instance.all_logs(result.run_id)]
        return {k: v.value for k, v in mat.metadata.items()}, logs

    first, logs = materialize()
    assert first["sync_mode"] == "full" and first["api_requests"] == 2
    assert any(m.startswith("sync mode: full (no saved state") for m in logs)
    sim.world.create_session(display_name="new")
    meta, logs = materialize()
    assert meta["sync_mode"] == "incremental" and meta["api_requests"] <= 3
    assert meta["rows_inserted"] == 1 and meta["sessions_marked_missing"] == 0
    assert any(m.startswith("sync mode: incremental") for m in logs)
    assert any(m.startswith("read what changed with") for m in logs)
    forced, logs = materialize(full=True)
    assert forced["sync_mode"] == "full" and forced["api_requests"] >= 2
    assert any(m == "sync mode: full (full: true)" for m in logs)
