"""Lifecycle of the world: sessions, resources, clock, timers, drift controls."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld, SimulatorError

from .conftest import RL, rstatus, status


def test_create_session_defaults_to_running_on_a_new_ready_resource(world: SimulatedWorld) -> None:
    sid = world.create_session(display_name="a")
    s = world.session(sid)
    assert s["status"] == "TRAINING_SESSION_STATUS_RUNNING"
    assert rstatus(world, s["model_resources_id"]) == "READY"
    assert s["created_by"] == "user_sim" and s["display_name"] == "a"


def test_creating_then_started_by_hand(world: SimulatedWorld) -> None:
    sid = world.create_session(status="CREATING")
    world.advance_clock(600)
    assert status(world, sid) == "CREATING"
    world.start_session(sid)
    assert status(world, sid) == "RUNNING"
    with pytest.raises(SimulatorError) as info:
        world.start_session(sid)
    assert info.value.status == 400


def test_fail_at_creation_immediately_or_on_start(world: SimulatedWorld) -> None:
    rid = world.create_model_resource()
    born_failed = world.create_session(rid, fail_at_creation=True)
    s = world.session(born_failed)
    assert s["status"] == "TRAINING_SESSION_STATUS_ERROR"
    assert s["error"]["code"] == "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
    assert s["error"]["message"] == (
        "The session could not start because the selected resource has no available capacity."
    )
    assert s["error"]["occurred_at"] == s["updated_at"]
    later = world.create_session(rid, fail_at_creation=True, status="CREATING")
    assert status(world, later) == "CREATING"
    world.start_session(later)
    assert status(world, later) == "ERROR"


def test_http_create_goes_creating_then_running_after_start_delay(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    world.session_start_delay = 30
    rid = world.create_model_resource()
    created = client.post(f"{RL}/training-sessions", json={"model_resources_id": rid}).json()
    assert created["status"] == "TRAINING_SESSION_STATUS_CREATING"
    world.advance_clock(29)
    assert status(world, created["id"]) == "CREATING"
    world.advance_clock(1)
    s = world.session(created["id"])
    assert s["status"] == "TRAINING_SESSION_STATUS_RUNNING"
    assert s["updated_at"] == "2026-11-29T12:00:30Z"  # stamped when due, not when observed


def test_http_create_can_fail_at_creation(world: SimulatedWorld, client: httpx.Client) -> None:
    rid = world.create_model_resource()
    world.fail_next_session_creates(1)
    failed = client.post(f"{RL}/training-sessions", json={"model_resources_id": rid}).json()
    ok = client.post(f"{RL}/training-sessions", json={"model_resources_id": rid}).json()
    assert failed["status"] == ok["status"] == "TRAINING_SESSION_STATUS_CREATING"
    got = client.get(f"{RL}/training-sessions/{failed['id']}").json()
    assert got["status"] == "TRAINING_SESSION_STATUS_ERROR"
    assert got["error"]["code"] == "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
    assert status(world, ok["id"]) == "RUNNING"


def test_stop_goes_through_stopping(world: SimulatedWorld) -> None:
    world.session_stop_delay = 10
    sid = world.create_session()
    world.advance_clock(1)
    world.stop_session(sid)
    assert status(world, sid) == "STOPPING"
    world.advance_clock(10)
    assert status(world, sid) == "STOPPED"
    other = world.create_session()
    world.stop_session(other, immediate=True)
    assert status(world, other) == "STOPPED"
    world.stop_session(other)  # no-op on a terminal session
    assert status(world, other) == "STOPPED"


def test_idle_resource_expires_with_its_sessions(world: SimulatedWorld) -> None:
    rid = world.create_model_resource(inactive_timeout=600)
    a = world.create_session(rid)
    b = world.create_session(rid)
    world.stop_session(b, immediate=True)
    assert world.model_resource(rid)["expires_at"] == "2026-11-29T12:10:00Z"
    world.advance_clock(599)
    assert status(world, a) == "RUNNING"
    world.advance_clock(2)
    assert rstatus(world, rid) == "STOPPED"
    assert status(world, a) == "EXPIRED" and status(world, b) == "STOPPED"
    s = world.session(a)
    assert s["updated_at"] == "2026-11-29T12:10:00Z"
    assert "expires_at" not in world.model_resource(rid)


def test_operations_and_extend_expiry_postpone_expiry(world: SimulatedWorld) -> None:
    rid = world.create_model_resource(inactive_timeout=600)
    sid = world.create_session(rid)
    world.advance_clock(500)
    world.submit_operation(sid, "forward-backward", "k1", {})
    world.advance_clock(500)
    assert status(world, sid) == "RUNNING"
    world.extend_expiry(rid, 3000)
    world.advance_clock(2000)
    assert status(world, sid) == "RUNNING"
    world.advance_clock(1001)
    assert status(world, sid) == "EXPIRED"
    with pytest.raises(SimulatorError) as info:
        world.extend_expiry(rid, 60)
    assert info.value.status == 400


def test_expire_resource_now(world: SimulatedWorld) -> None:
    sid = world.create_session()
    rid = world.session(sid)["model_resources_id"]
    world.expire_resource(rid)
    assert status(world, sid) == "EXPIRED" and rstatus(world, rid) == "STOPPED"


def test_resource_capacity(world: SimulatedWorld) -> None:
    lora = world.create_model_resource(lora=True)
    for _ in range(5):
        world.create_session(lora)
    with pytest.raises(SimulatorError) as info:
        world.create_session(lora)
    assert info.value.status == 429
    full = world.create_model_resource(lora=False)
    first = world.create_session(full)
    with pytest.raises(SimulatorError):
        world.create_session(full)
    world.stop_session(first, immediate=True)  # a STOPPED session frees its slot
    world.create_session(full)


def test_stop_resource_force_and_already_stopped(world: SimulatedWorld) -> None:
    world.resource_stop_delay = 5
    rid = world.create_model_resource()
    sid = world.create_session(rid)
    with pytest.raises(SimulatorError) as info:
        world.stop_model_resource(rid)
    assert info.value.status == 400 and info.value.param == "force"
    world.stop_model_resource(rid, force=True)
    assert rstatus(world, rid) == "STOPPING"
    world.advance_clock(5)
    assert rstatus(world, rid) == "STOPPED" and status(world, sid) == "STOPPED"
    with pytest.raises(SimulatorError):
        world.stop_model_resource(rid, force=True)


def test_resource_provisioning_states(world: SimulatedWorld) -> None:
    world.resource_provision_delay = 10
    rid = world.create_model_resource(status="PENDING")
    r = world.model_resource(rid)
    assert r["status"] == "MODEL_RESOURCES_STATUS_PENDING"
    assert r["status_details"] == {"queue_position": 1} and "expires_at" not in r
    with pytest.raises(SimulatorError):
        world.create_session(rid)
    world.advance_clock(5)
    assert rstatus(world, rid) == "CREATING"
    world.advance_clock(5)
    assert rstatus(world, rid) == "READY"
    assert world.model_resource(rid)["expires_at"] == "2026-11-29T13:00:10Z"


def test_fail_model_resource_fails_its_sessions(world: SimulatedWorld) -> None:
    sid = world.create_session()
    rid = world.session(sid)["model_resources_id"]
    world.fail_model_resource(rid)
    r = world.model_resource(rid)
    assert r["status"] == "MODEL_RESOURCES_STATUS_ERROR" and r["error"]["code"]
    assert world.session(sid)["error"]["code"] == "TRAINING_SESSION_ERROR_CODE_RESOURCE_UNAVAILABLE"


def test_updated_at_moves_on_every_change(world: SimulatedWorld) -> None:
    sid = world.create_session()
    stamps = [world.session(sid)["updated_at"]]
    for change in (
        lambda: world.advance_steps(sid, 3),
        lambda: world.add_inference_checkpoint(sid),
        lambda: world.patch_session(sid, display_name="renamed"),
        lambda: world.stop_session(sid),
    ):
        world.advance_clock(1)
        change()
        stamps.append(world.session(sid)["updated_at"])
    assert stamps == sorted(set(stamps)) and len(stamps) == 5


def test_registration_lag(world: SimulatedWorld) -> None:
    sid = world.create_session()
    cid = world.add_inference_checkpoint(sid, registered=False)
    assert "registration" not in world.session(sid)["inference_checkpoints"][0]
    assert "inference_registration" not in world.checkpoint(cid)
    world.advance_clock(7)
    world.register_checkpoint(cid)
    s = world.session(sid)
    assert "adapter" in s["inference_checkpoints"][0]["registration"]
    assert s["updated_at"] == "2026-11-29T12:00:07Z"
    assert "inference_registration" in world.checkpoint(cid)


def test_set_status_accepts_unknown_raw_strings(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    sid = world.create_session()
    world.set_status(sid, "TRAINING_SESSION_STATUS_PAUSED")
    assert client.get(f"{RL}/training-sessions/{sid}").json()["status"] == (
        "TRAINING_SESSION_STATUS_PAUSED"
    )
    listed = client.get(f"{RL}/training-sessions").json()["data"]
    assert [s["status"] for s in listed] == ["TRAINING_SESSION_STATUS_PAUSED"]
    world.set_status(sid, "STOPPED")  # short names are expanded
    assert world.session(sid)["status"] == "TRAINING_SESSION_STATUS_STOPPED"
    rid = world.session(sid)["model_resources_id"]
    world.set_status(rid, "MODEL_RESOURCES_STATUS_HIBERNATING")
    assert world.model_resource(rid)["status"] == "MODEL_RESOURCES_STATUS_HIBERNATING"


def test_mutate_session_json_and_response_hook(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.mutate_session_json(sid, drop=("metadata", "policy_state"), extra={"brand_new": [1]})
    s = client.get(f"{RL}/training-sessions/{sid}").json()
    assert "metadata" not in s and "policy_state" not in s and s["brand_new"] == [1]

    def hook(path: str, payload: dict) -> dict:
        if path == f"{RL}/training-sessions":
            payload.pop("meta")
        return payload

    world.response_hook = hook
    assert "meta" not in client.get(f"{RL}/training-sessions").json()
    assert "id" in client.get(f"{RL}/training-sessions/{sid}").json()
    world.response_hook = lambda path, payload: 1 / 0
    assert client.get(f"{RL}/training-sessions").status_code == 500


def test_manual_clock_start_and_advance() -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    world = SimulatedWorld(clock="manual", start=start)
    assert world.now() == start
    world.advance_clock(1.5)
    sid = world.create_session()
    assert world.session(sid)["created_at"] == "2026-01-02T03:04:06.500000Z"
    with pytest.raises(ValueError):
        world.advance_clock(-1)


def test_real_clock_with_offset() -> None:
    world = SimulatedWorld()
    before = datetime.now(UTC)
    world.advance_clock(3600)
    assert (world.now() - before).total_seconds() >= 3600


def test_same_seed_same_world() -> None:
    def build() -> list[dict]:
        w = SimulatedWorld(seed=5, clock="manual")
        sid = w.create_session(display_name="x")
        w.add_inference_checkpoint(sid)
        return w.sessions()

    assert build() == build()
    assert SimulatedWorld(seed=6, clock="manual").create_session() != (
        SimulatedWorld(seed=5, clock="manual").create_session()
    )


def test_unknown_ids_raise_404(world: SimulatedWorld) -> None:
    for call in (
        lambda: world.session("nope"),
        lambda: world.stop_session("nope"),
        lambda: world.model_resource("nope"),
        lambda: world.checkpoint("nope"),
        lambda: world.set_status("nope", "RUNNING"),
    ):
        with pytest.raises(SimulatorError) as info:
            call()
        assert info.value.status == 404


def test_world_is_safe_under_concurrent_use(world: SimulatedWorld, sim: RLSimulator) -> None:
    rid = world.create_model_resource()
    sid = world.create_session(rid)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(200):
                world.advance_steps(sid, 1)
                world.add_inference_checkpoint(sid)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            with httpx.Client(base_url=sim.base_url, headers=sim.headers) as c:
                for _ in range(100):
                    c.get(f"{RL}/training-sessions").raise_for_status()
                    c.get(f"{RL}/checkpoints", params={"limit": 100}).raise_for_status()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = world.session(sid)
    assert s["step"] == 200 and len(s["inference_checkpoints"]) == 200
