"""Wire shapes: Session/Checkpoint/ModelResources JSON, registration shapes, int64 strings."""

from __future__ import annotations

import re

import httpx
import pytest

from rl_sessions_dagster.testing import SimulatedWorld

from .conftest import RL

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")
SESSION_KEYS = {
    "id", "status", "base_model", "created_at", "updated_at", "created_by", "model_resources_id",
    "metadata", "inference_checkpoints", "training_checkpoints", "step", "policy_state",
}  # fmt: skip


def test_session_has_every_required_sdk_field(world: SimulatedWorld, client: httpx.Client) -> None:
    wandb = {
        "entity": "e",
        "project": "p",
        "group": "g",
        "run_name": "r",
        "run_id": "i",
        "url": "u",
    }
    sid = world.create_session(display_name="d", wandb=wandb)
    world.advance_steps(sid, 4)
    world.add_inference_checkpoint(sid)
    world.add_training_checkpoint(sid)
    s = client.get(f"{RL}/training-sessions/{sid}").json()
    assert set(s) >= SESSION_KEYS
    assert UUID4.match(s["id"]) and UUID4.match(s["model_resources_id"])
    assert RFC3339.match(s["created_at"]) and RFC3339.match(s["updated_at"])
    assert s["metadata"] == {"wandb": wandb}
    assert s["policy_state"] == {
        "applied_weights_version": 0, "pending_publish": False,
        "target_weights_version": 0, "trainer_step": 4,
    }  # fmt: skip
    assert s["lora_config"] == {"rank": 32, "alpha": 64, "dropout": 0.0, "train_unembed": True}
    (ick,) = s["inference_checkpoints"]
    assert set(ick) == {"id", "created_at", "step", "registration"} and ick["step"] == 4
    (tck,) = s["training_checkpoints"]
    assert set(tck["registration"]) == {"id", "revision_id"}
    assert "error" not in s and "resume_from_checkpoint_id" not in s


def test_session_without_metadata_or_lora(world: SimulatedWorld) -> None:
    sid = world.create_session(lora=False)
    s = world.session(sid)
    assert s["metadata"] == {} and "lora_config" not in s and "display_name" not in s


@pytest.mark.parametrize(
    ("shape", "lora", "expected_keys"),
    [
        ("current", True, {"adapter"}),
        ("current", False, {"model"}),
        ("object_ids", True, {
            "model_name", "registered_at", "model_object_id", "model_object_revision_id",
            "adapter_object_id", "adapter_object_revision_id",
        }),
        ("object_ids", False, {
            "model_name", "registered_at", "model_object_id", "model_object_revision_id",
        }),
        ("legacy", True, {"model_name", "registered_at"}),
    ],
)  # fmt: skip
def test_registration_shapes(
    world: SimulatedWorld, client: httpx.Client, shape: str, lora: bool, expected_keys: set[str]
) -> None:
    sid = world.create_session(registration_shape=shape, lora=lora)
    world.advance_steps(sid, 42)
    cid = world.add_inference_checkpoint(sid)
    reg = client.get(f"{RL}/training-sessions/{sid}").json()["inference_checkpoints"][0][
        "registration"
    ]
    assert set(reg) == expected_keys
    for key in ("model", "adapter"):
        if key in reg:
            assert reg[key]["id"].startswith("ml_") and reg[key]["revision_id"].startswith("rv_")
    if "model_name" in reg:
        assert reg["model_name"].startswith("user_sim/Qwen3-8B-rl-")
        assert reg["model_name"].endswith("-step-42")
        assert reg["registered_at"] == "2026-11-29T12:00:00Z"
    listed = client.get(f"{RL}/checkpoints/{cid}").json()
    assert listed["inference_registration"] == reg


def test_no_registration_shape_and_minimax(world: SimulatedWorld) -> None:
    sid = world.create_session(registration_shape=None)
    world.add_inference_checkpoint(sid)
    world.add_training_checkpoint(sid)
    s = world.session(sid)
    assert "registration" not in s["inference_checkpoints"][0]
    assert "registration" not in s["training_checkpoints"][0]
    mm = world.create_session(base_model="MiniMaxAI/MiniMax-M3")
    cid = world.add_inference_checkpoint(mm)
    assert "registration" not in world.session(mm)["inference_checkpoints"][0]
    with pytest.raises(ValueError):
        world.register_checkpoint(cid)


def test_per_checkpoint_shape_override(world: SimulatedWorld) -> None:
    sid = world.create_session(registration_shape="current")
    world.add_inference_checkpoint(sid, registration_shape="legacy")
    world.add_inference_checkpoint(sid)
    regs = [c["registration"] for c in world.session(sid)["inference_checkpoints"]]
    assert set(regs[0]) == {"model_name", "registered_at"} and set(regs[1]) == {"adapter"}


def test_int64_as_string(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session(int64_as_string=True, lora_config={"seed": 7})
    world.advance_steps(sid, 42)
    cid = world.add_inference_checkpoint(sid)
    s = client.get(f"{RL}/training-sessions/{sid}").json()
    assert s["step"] == "42" and s["inference_checkpoints"][0]["step"] == "42"
    assert s["policy_state"]["trainer_step"] == "42"
    assert s["policy_state"]["applied_weights_version"] == "0"
    assert s["lora_config"]["seed"] == "7" and s["lora_config"]["rank"] == 32
    assert client.get(f"{RL}/checkpoints/{cid}").json()["step"] == "42"
    op = client.post(
        f"{RL}/training-sessions/{sid}/operations/optim-step", headers={"Idempotency-Key": "a"}
    ).json()
    done = client.get(f"{RL}/training-sessions/{sid}/operations/optim-step/{op['id']}").json()
    assert done["output"] == {"step": "43"}


def test_error_without_code(world: SimulatedWorld) -> None:
    sid = world.create_session()
    world.fail_session(sid, code=None, message="old style")
    assert world.session(sid)["error"] == {
        "message": "old style",
        "occurred_at": "2026-11-29T12:00:00Z",
    }


def test_checkpoint_and_resource_shapes(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.add_training_checkpoint(sid)
    ck = client.get(f"{RL}/checkpoints").json()["data"][0]
    assert set(ck) == {
        "id", "base_model", "created_at", "session_id", "step", "type", "training_registration",
        "lora_rank",
    }  # fmt: skip
    assert ck["type"] == "CHECKPOINT_TYPE_TRAINING" and ck["session_id"] == sid
    r = client.get(f"{RL}/model-resources/{world.session(sid)['model_resources_id']}").json()
    assert {
        "id", "base_model", "compute_config", "created_at", "created_by", "inactive_timeout",
        "lora_enabled", "optimizer_config", "status", "status_details", "updated_at", "expires_at",
    } == set(r)  # fmt: skip
    assert r["compute_config"] == {"num_generator_replicas": 1, "gpu_type": "B200-SXM"}
    assert r["inactive_timeout"] == 3600 and r["lora_enabled"] is True


def test_null_lora_rank_shows_as_null(world: SimulatedWorld, client: httpx.Client) -> None:
    body = {"model_resources_id": world.create_model_resource(), "lora_config": {"rank": None}}
    sid = client.post(f"{RL}/training-sessions", json=body).json()["id"]
    world.add_training_checkpoint(sid)
    ck = client.get(f"{RL}/checkpoints", params={"session_id": sid}).json()["data"][0]
    assert "lora_rank" in ck and ck["lora_rank"] is None


def test_cached_json_is_invalidated(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    first = client.get(f"{RL}/training-sessions").json()["data"][0]
    world.advance_steps(sid, 1)
    second = client.get(f"{RL}/training-sessions").json()["data"][0]
    assert (first["step"], second["step"]) == (0, 1)
