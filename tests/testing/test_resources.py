"""Model-resource lifecycle in the simulator: capacity queue, expiry refresh, extend-expiry,
stop with and without force, prices, stop permission, billing; over HTTP and the control API."""

from __future__ import annotations

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld, SimulatorError

from .conftest import RL, rstatus


def test_capacity_queue_positions_and_admission(world: SimulatedWorld) -> None:
    world.resource_provision_delay = 10
    world.set_gpu_capacity("H100-80GB", 1)
    a = world.create_model_resource(status="PENDING", gpu_type="H100-80GB")
    b = world.create_model_resource(status="PENDING", gpu_type="H100-80GB")
    world.advance_clock(1)
    c = world.create_model_resource(status="PENDING", gpu_type="H100-80GB")
    other = world.create_model_resource(status="PENDING")  # B200: not capped
    assert world.queued_resources() == [b, c]
    assert world.model_resource(b)["status_details"] == {"queue_position": 1}
    assert world.model_resource(c)["status_details"] == {"queue_position": 2}
    world.advance_clock(3600)  # a queue has no time limit
    assert rstatus(world, a) == "READY" and rstatus(world, other) == "READY"
    assert rstatus(world, b) == "PENDING" and rstatus(world, c) == "PENDING"
    world.stop_model_resource(a)  # STOPPING still holds the GPUs
    assert rstatus(world, b) == "PENDING"
    world.advance_clock(0)
    assert rstatus(world, a) == "STOPPED"
    assert world.queued_resources() == [c]
    assert world.model_resource(c)["status_details"] == {"queue_position": 1}
    world.advance_clock(10)
    assert rstatus(world, b) == "READY" and rstatus(world, c) == "PENDING"
    world.fail_model_resource(b)
    world.advance_clock(10)
    assert rstatus(world, c) == "READY" and world.queued_resources() == []
    # Stopping a resource still in the queue frees nothing it never held.
    world.resource_stop_delay = 30
    d = world.create_model_resource(status="PENDING", gpu_type="H100-80GB")
    e = world.create_model_resource(status="PENDING", gpu_type="H100-80GB")
    world.stop_model_resource(d)
    assert world.queued_resources() == [e]
    world.stop_model_resource(c)
    world.advance_clock(30)
    assert rstatus(world, d) == "STOPPED" and world.queued_resources() == []
    world.advance_clock(10)
    assert rstatus(world, e) == "READY"


def test_expires_at_is_refreshed_about_once_a_minute_and_never_earlier(
    world: SimulatedWorld,
) -> None:
    rid = world.create_model_resource(inactive_timeout=600)
    sid = world.create_session(rid)  # activity at 12:00:00 (same instant as READY)
    assert world.model_resource(rid)["expires_at"] == "2026-11-29T12:10:00Z"
    world.advance_clock(30)
    world.submit_operation(sid, "optim-step", "k1", {})  # activity, not yet shown
    assert world.model_resource(rid)["expires_at"] == "2026-11-29T12:10:00Z"
    world.advance_clock(40)
    world.submit_operation(sid, "optim-step", "k2", {})  # 70 s after the last refresh
    assert world.model_resource(rid)["expires_at"] == "2026-11-29T12:11:10Z"
    world.advance_clock(600)  # 12:11:10 -> exactly the shown deadline
    assert rstatus(world, rid) == "STOPPED"
    world2 = SimulatedWorld(seed=1, clock="manual")
    r2 = world2.create_model_resource(inactive_timeout=600)
    s2 = world2.create_session(r2)
    world2.advance_clock(30)
    world2.submit_operation(s2, "optim-step", "k", {})  # true activity 12:00:30, shown 12:00:00
    world2.advance_clock(575)  # 12:10:05: past the shown deadline, before the true one
    assert rstatus(world2, r2) == "READY"
    world2.advance_clock(30)
    assert rstatus(world2, r2) == "STOPPED"


def test_http_stop_force_extend_prices_and_permissions(
    sim: RLSimulator, world: SimulatedWorld, client: httpx.Client
) -> None:
    world.set_price("Qwen/Qwen3-8B", 2.5)
    body = {"base_model": "Qwen/Qwen3-8B", "lora_enabled": True,
            "compute_config": {"num_generator_replicas": 1}}  # fmt: skip
    est = client.post(f"{RL}/model-resources/estimate-cost", json=body).json()
    assert est == {"currency": "USD", "price_per_hour": 5.0}
    full = client.post(
        f"{RL}/model-resources/estimate-cost", json={**body, "lora_enabled": False}
    ).json()
    assert full["price_per_hour"] == 10.0
    rid = client.post(f"{RL}/model-resources", json=body).json()["id"]
    assert rstatus(world, rid) == "READY"  # provision delay 0
    sid = client.post(f"{RL}/training-sessions", json={"model_resources_id": rid}).json()["id"]
    extended = client.post(f"{RL}/model-resources/{rid}/extend-expiry", json={"seconds": 7200})
    assert extended.json()["expires_at"] == "2026-11-29T14:00:00Z"
    refused = client.post(f"{RL}/model-resources/{rid}/stop")
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "force"
    world.protect_resource(rid)
    assert (
        client.post(f"{RL}/model-resources/{rid}/stop", params={"force": "true"}).status_code == 403
    )
    world.protect_resource(rid, False)
    stopped = client.post(f"{RL}/model-resources/{rid}/stop", params={"force": "true"}).json()
    assert stopped["status"] == "MODEL_RESOURCES_STATUS_STOPPING"
    world.advance_clock(0)
    assert world.session(sid)["status"] == "TRAINING_SESSION_STATUS_STOPPED"
    again = client.post(f"{RL}/model-resources/{rid}/stop", params={"force": "true"})
    assert again.status_code == 400
    assert (
        client.post(f"{RL}/model-resources/{rid}/extend-expiry", json={"seconds": 60}).status_code
        == 400
    )


def test_billing_counts_ready_time_only(world: SimulatedWorld) -> None:
    world.resource_provision_delay = 100
    world.resource_stop_delay = 50
    rid = world.create_model_resource(status="PENDING")
    world.advance_clock(100)  # READY at 12:01:40
    world.advance_clock(1800)
    world.stop_model_resource(rid)
    world.advance_clock(50)
    bill = world.billing()[rid]
    assert bill["ready_at"] == "2026-11-29T12:01:40Z"
    assert bill["unready_at"] == "2026-11-29T12:31:40Z"
    assert bill["billed_seconds"] == 1800.0 and bill["billing"] is False
    assert world.billing_resources() == []
    with pytest.raises(SimulatorError) as info:
        world.protect_resource("nope")
    assert info.value.status == 404


def test_control_api_for_resources(ctl: httpx.Client, world: SimulatedWorld) -> None:
    assert ctl.post("/capacity", json={"gpu_type": "B200-SXM", "n": 0}).status_code == 200
    rid = ctl.post("/resources", json={"status": "PENDING"}).json()["id"]
    assert world.queued_resources() == [rid]
    ctl.post("/capacity", json={"gpu_type": "B200-SXM", "n": None})
    assert rstatus(world, rid) == "READY"
    assert ctl.post("/prices", json={"base_model": "Qwen/Qwen3-8B",
                                     "price_per_gpu_hour": 1.0}).status_code == 200  # fmt: skip
    assert ctl.post(f"/resources/{rid}/extend-expiry", json={"seconds": 900}).status_code == 200
    assert ctl.post(f"/resources/{rid}/protect", json={}).status_code == 200
    assert ctl.post(f"/resources/{rid}/stop", json={}).status_code == 403
    ctl.post(f"/resources/{rid}/protect", json={"protected": False})
    ctl.post(f"/resources/{rid}/status", json={"status": "MODEL_RESOURCES_STATUS_WEIRD"})
    assert world.model_resource(rid)["status"] == "MODEL_RESOURCES_STATUS_WEIRD"
    ctl.post(f"/resources/{rid}/fail", json={"code": "X_CODE", "message": "m"})
    assert world.model_resource(rid)["error"]["code"] == "X_CODE"
    bill = ctl.get("/billing").json()["result"][rid]
    assert bill["billing"] is False and bill["ready_at"] is not None
    assert ctl.post("/capacity", json={}).status_code == 400


def test_a_resource_created_ready_bills_from_its_creation():
    world = SimulatedWorld(clock="manual")
    rid = world.create_model_resource(inactive_timeout=3600)
    world.advance_clock(900)
    assert world.billing()[rid]["billed_seconds"] == 900.0
    world.stop_model_resource(rid)
    world.advance_clock(60)
    assert world.billing()[rid]["billed_seconds"] == 900.0
