"""``/_sim/*`` control endpoints: drive a simulator from another process."""

from __future__ import annotations

import httpx

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

from .conftest import RL


def test_drive_the_world_over_http(
    sim: RLSimulator, ctl: httpx.Client, world: SimulatedWorld, client: httpx.Client
) -> None:
    assert ctl.get("/health").json()["now"] == "2026-11-29T12:00:00Z"
    r = ctl.post("/resources", json={"base_model": "Qwen/Qwen3-8B", "inactive_timeout": 600}).json()
    rid = r["id"]
    s = ctl.post(
        "/sessions",
        json={"resource_id": rid, "display_name": "demo", "registration_shape": "legacy"},
    ).json()
    sid = s["id"]
    assert s["status"] == "TRAINING_SESSION_STATUS_RUNNING" and s["display_name"] == "demo"
    assert ctl.post(f"/sessions/{sid}/steps", json={"n": 5}).json()["result"] == 5
    ck = ctl.post(f"/sessions/{sid}/checkpoints", json={"registered": False}).json()
    assert ck["step"] == 5 and "inference_registration" not in ck
    assert ctl.post(f"/checkpoints/{ck['id']}/register").status_code == 200
    assert "model_name" in world.checkpoint(ck["id"])["inference_registration"]
    tck = ctl.post(f"/sessions/{sid}/checkpoints", json={"type": "training"}).json()
    assert tck["type"] == "CHECKPOINT_TYPE_TRAINING"

    ctl.post("/clock/advance", json={"seconds": 30})
    assert ctl.get("/health").json()["now"] == "2026-11-29T12:00:30Z"
    other = ctl.post("/sessions", json={"status": "CREATING"}).json()["id"]
    ctl.post(f"/sessions/{other}/start")
    ctl.post(f"/sessions/{other}/fail", json={"message": "boom"})
    assert world.session(other)["error"]["message"] == "boom"
    ctl.post(f"/sessions/{sid}/status", json={"status": "TRAINING_SESSION_STATUS_PAUSED"})
    assert world.session(sid)["status"] == "TRAINING_SESSION_STATUS_PAUSED"
    ctl.post(f"/sessions/{sid}/stop", json={"immediate": True})
    assert world.session(sid)["status"] == "TRAINING_SESSION_STATUS_STOPPED"
    third = ctl.post("/sessions", json={"resource_id": rid}).json()["id"]
    ctl.post(f"/resources/{rid}/expire")
    assert world.session(third)["status"] == "TRAINING_SESSION_STATUS_EXPIRED"

    ctl.post("/list-order", json={"order": "unordered"})
    assert world.list_order == "unordered"
    summary = ctl.post(
        "/populate", json={"n_sessions": 30, "checkpoints_per_session": 2, "active": 3}
    ).json()
    assert summary["sessions"] == 30

    ctl.post("/faults", json={"pattern": "GET /v1/rl/training-sessions", "status": 503, "times": 1})
    assert client.get(f"{RL}/training-sessions").status_code == 503
    stats = ctl.get("/stats").json()
    assert stats["requests"]["faults"] == {"status:503": 1}
    assert stats["requests"]["by_route"]["GET /v1/rl/training-sessions"] == 1
    assert stats["world"]["sessions"] == 33 and stats["list_order"] == "unordered"
    ctl.post("/faults", json={"pattern": "*", "status": 500})
    ctl.delete("/faults")
    assert client.get(f"{RL}/training-sessions").status_code == 200
    ctl.post("/requests/reset")
    assert sim.requests.count("GET", "/v1/rl/training-sessions") == 0


def test_control_errors_are_400_or_404(ctl: httpx.Client) -> None:
    assert ctl.post("/clock/advance", json={}).status_code == 400
    assert ctl.post("/clock/advance", json={"seconds": -5}).status_code == 400
    assert ctl.post("/sessions/nope/stop").status_code == 404
    assert ctl.post("/faults", json={"status": 500}).status_code == 400
    assert ctl.post("/faults", json={"pattern": "*", "explode": True}).status_code == 400
    assert ctl.post("/faults", json={"pattern": "*"}).status_code == 400
    assert ctl.post("/sessions", json={"registration_shape": "weird"}).status_code == 400
    assert ctl.post("/list-order", json={"order": "sideways"}).status_code == 400
    assert ctl.post("/populate", json={"n_sessions": "many"}).status_code == 400


def test_calls_on_one_object_answer_with_it_as_changed(ctl: httpx.Client) -> None:
    rid = ctl.post("/resources", json={"inactive_timeout": 600}).json()["id"]
    sid = ctl.post("/sessions", json={"resource_id": rid}).json()["id"]
    stepped = ctl.post(f"/sessions/{sid}/steps", json={"n": 3}).json()
    assert stepped["session"]["id"] == sid and stepped["session"]["step"] in (3, "3")
    ck = ctl.post(f"/sessions/{sid}/checkpoints", json={"registered": False}).json()
    registered = ctl.post(f"/checkpoints/{ck['id']}/register").json()
    assert registered["checkpoint"]["id"] == ck["id"]
    assert "inference_registration" in registered["checkpoint"]
    failed = ctl.post(f"/sessions/{sid}/fail", json={"message": "boom"}).json()["session"]
    assert failed["status"] == "TRAINING_SESSION_STATUS_ERROR"
    assert failed["error"]["message"] == "boom"
    other = ctl.post("/sessions", json={"resource_id": rid}).json()["id"]
    stopped = ctl.post(f"/sessions/{other}/stop", json={"immediate": True}).json()["session"]
    assert stopped["status"] == "TRAINING_SESSION_STATUS_STOPPED"
    expired = ctl.post(f"/resources/{rid}/expire").json()["resource"]
    assert expired["id"] == rid and expired["status"] != "MODEL_RESOURCES_STATUS_ACTIVE"
