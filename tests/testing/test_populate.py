"""Bulk population: counts, realistic statuses, reproducibility, pages (no timing asserts)."""

from __future__ import annotations

import httpx

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

from .conftest import RL, all_pages


def test_populate_10k_sessions_with_10_checkpoints_each() -> None:
    world = SimulatedWorld(seed=3)
    summary = world.populate(10_000, checkpoints_per_session=10, active=50)
    counts = world.counts()
    assert summary["sessions"] == counts["sessions"] == 10_000
    with_checkpoints = 10_000 - summary["failed_at_creation"]
    assert counts["checkpoints"] == summary["checkpoints"] == with_checkpoints * 11
    assert counts["checkpoints_by_type"]["CHECKPOINT_TYPE_INFERENCE"] == with_checkpoints * 10
    by_status = counts["sessions_by_status"]
    assert by_status["TRAINING_SESSION_STATUS_RUNNING"] == 50
    finished = sum(
        by_status[f"TRAINING_SESSION_STATUS_{s}"] for s in ("STOPPED", "EXPIRED", "ERROR")
    )
    assert finished == 9_950 and by_status["TRAINING_SESSION_STATUS_STOPPED"] > 5_000
    assert summary["seconds"] >= 0 and summary["model_resources"] == counts["model_resources"]

    with (
        RLSimulator(world=world) as sim,
        httpx.Client(base_url=sim.base_url, headers=sim.headers) as c,
    ):
        page = c.get(f"{RL}/training-sessions", params={"limit": 100}).json()
        assert len(page["data"]) == 100 and page["meta"]["has_more"]
        created = [s["created_at"] for s in page["data"]]
        assert created == sorted(created, reverse=True)
        assert all(len(s["inference_checkpoints"]) in (0, 10) for s in page["data"])
        running = all_pages(
            c, f"{RL}/training-sessions", status="TRAINING_SESSION_STATUS_RUNNING", limit=100
        )
        assert len(running) == 50
        ckpts = c.get(f"{RL}/checkpoints", params={"limit": 100}).json()["data"]
        assert [k["created_at"] for k in ckpts] == sorted(
            (k["created_at"] for k in ckpts), reverse=True
        )


def test_populated_history_is_realistic_and_reproducible() -> None:
    def build() -> SimulatedWorld:
        w = SimulatedWorld(seed=11, clock="manual")
        w.populate(
            300,
            checkpoints_per_session=3,
            active=7,
            registration_shapes=("current", "legacy", None),
        )
        return w

    a, b = build(), build()
    assert a.sessions() == b.sessions() and a.model_resources() == b.model_resources()
    sessions = a.sessions()
    errors = [s for s in sessions if s["status"] == "TRAINING_SESSION_STATUS_ERROR"]
    assert errors and all(
        s["error"]["code"].startswith("TRAINING_SESSION_ERROR_CODE_") for s in errors
    )
    assert any(
        s["error"]["code"].endswith("RESOURCE_AT_CAPACITY") and not s["inference_checkpoints"]
        for s in errors
    )
    for s in sessions:
        assert s["created_at"] <= s["updated_at"]
        steps = [c["step"] for c in s["inference_checkpoints"]]
        assert steps == sorted(steps) and all(
            c["created_at"] >= s["created_at"] for c in s["inference_checkpoints"]
        )
        assert s["created_by"] in ("user_sim", "user_teammate")
    shapes = {
        frozenset(c.get("registration", {})) for s in sessions for c in s["inference_checkpoints"]
    }
    assert {
        frozenset({"adapter"}),
        frozenset({"model_name", "registered_at"}),
        frozenset(),
    } <= shapes
    active_resources = {
        s["model_resources_id"] for s in sessions if s["status"].endswith("RUNNING")
    }
    for rid in active_resources:
        assert a.model_resource(rid)["status"] == "MODEL_RESOURCES_STATUS_READY"
    # The world keeps working normally after a populate (timers, new ids, capacity).
    rid = next(iter(active_resources))
    new = a.create_session(rid)
    assert new not in {s["id"] for s in sessions}
    a.advance_clock(2 * 3600)
    assert a.session(new)["status"] == "TRAINING_SESSION_STATUS_EXPIRED"


def test_populate_twice_never_collides() -> None:
    w = SimulatedWorld(seed=1)
    w.populate(50, checkpoints_per_session=1, active=2)
    w.populate(50, checkpoints_per_session=1, active=2)
    assert w.counts()["sessions"] == 100 and len(set(w.session_ids())) == 100


def test_populate_unordered_world() -> None:
    w = SimulatedWorld(seed=2, list_order="unordered")
    w.populate(200, checkpoints_per_session=0, active=0)
    ids = w.session_ids()
    assert len(ids) == 200
    created = [w.session(i)["created_at"] for i in ids]
    assert created != sorted(created, reverse=True)
