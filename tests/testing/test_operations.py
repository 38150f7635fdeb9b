"""The seven operation kinds: submit/poll, outputs, idempotency, failures."""

from __future__ import annotations

import httpx
import pytest

from rl_sessions_dagster.testing import SimulatedWorld
from rl_sessions_dagster.testing.simulator.wire import OPERATION_KINDS

from .conftest import RL

COMPLETED = "TRAINING_OPERATION_STATUS_COMPLETED"


def submit(
    client: httpx.Client, sid: str, kind: str, key: str | None = "k", body: dict | None = None
) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post(
        f"{RL}/training-sessions/{sid}/operations/{kind}", headers=headers, json=body
    )


def poll(client: httpx.Client, sid: str, kind: str, op_id: str) -> dict:
    return (
        client.get(f"{RL}/training-sessions/{sid}/operations/{kind}/{op_id}")
        .raise_for_status()
        .json()
    )


@pytest.mark.parametrize("kind", OPERATION_KINDS)
def test_each_kind_completes_on_first_poll(
    world: SimulatedWorld, client: httpx.Client, kind: str
) -> None:
    sid = world.create_session()
    op = submit(
        client, sid, kind, body={"model_inputs": [{"chunks": []}] * 2, "num_samples": 3}
    ).json()
    assert set(op) == {"id", "status"} and op["status"] == "TRAINING_OPERATION_STATUS_PENDING"
    done = poll(client, sid, kind, op["id"])
    assert done["status"] == COMPLETED and done["id"] == op["id"]
    out = done["output"]
    s = world.session(sid)
    if kind in ("forward-backward",):
        assert out["loss"] > 0 and set(out["metrics"]) == {"kl", "clip_fraction"}
    elif kind == "custom-forward-backward":
        assert out == {}
    elif kind == "optim-step":
        assert out == {"step": 1} and s["step"] == 1 and s["policy_state"]["trainer_step"] == 1
    elif kind == "weights-sync":
        assert out == {"weights_version": 0}
    elif kind == "sample":
        assert len(out["results"]) == 2 and len(out["results"][0]["sequences"]) == 3
        seq = out["results"][0]["sequences"][0]
        assert seq["stop_reason"] == "STOP_REASON_STOP" and len(seq["tokens"]) == len(
            seq["logprobs"]
        )
        assert out["results"][0]["policy_segments"] == [{"start_token": 0, "version": 0}]
    elif kind == "inference-checkpoint":
        assert out["checkpoint"] == s["inference_checkpoints"][-1]
        assert "adapter" in out["checkpoint"]["registration"]
    else:
        assert out["checkpoint"] == s["training_checkpoints"][-1]
    assert poll(client, sid, kind, op["id"]) == done  # stable once finished


def test_training_loop_moves_step_and_policy_state(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    sid = world.create_session(registration_shape="legacy")
    for i in range(3):
        for kind in ("forward-backward", "optim-step"):
            poll(client, sid, kind, submit(client, sid, kind, key=f"{kind}-{i}").json()["id"])
    op = submit(
        client,
        sid,
        "weights-sync",
        key="ws",
        body={"weight_sync_type": "WEIGHT_SYNC_TYPE_BACKGROUND_PUBLISH"},
    ).json()
    assert poll(client, sid, "weights-sync", op["id"])["output"] == {"weights_version": 3}
    ps = world.session(sid)["policy_state"]
    assert ps == {
        "applied_weights_version": 0,
        "pending_publish": True,
        "target_weights_version": 3,
        "trainer_step": 3,
    }
    poll(client, sid, "sample", submit(client, sid, "sample", key="s").json()["id"])
    assert world.session(sid)["policy_state"]["applied_weights_version"] == 3
    ck = poll(
        client,
        sid,
        "inference-checkpoint",
        submit(client, sid, "inference-checkpoint").json()["id"],
    )
    assert ck["output"]["checkpoint"]["step"] == 3
    assert ck["output"]["checkpoint"]["registration"]["model_name"].endswith("-step-3")


def test_idempotency_key_returns_the_original(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    first = submit(client, sid, "optim-step", key="same").json()
    again = submit(client, sid, "optim-step", key="same").json()
    assert again["id"] == first["id"]
    poll(client, sid, "optim-step", first["id"])
    after_done = submit(client, sid, "optim-step", key="same").json()
    assert after_done["id"] == first["id"] and after_done["status"] == COMPLETED
    assert world.session(sid)["step"] == 1  # applied once
    other_kind = submit(client, sid, "forward-backward", key="same").json()
    other_session = submit(client, world.create_session(), "optim-step", key="same").json()
    assert len({first["id"], other_kind["id"], other_session["id"]}) == 3


def test_missing_idempotency_key_is_400(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    for key in (None, ""):
        r = submit(client, sid, "optim-step", key=key)
        assert r.status_code == 400 and r.json()["error"]["param"] == "Idempotency-Key"
    assert world.counts()["operations"] == 0


def test_operation_on_inactive_session_fails(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.stop_session(sid, immediate=True)
    op = submit(client, sid, "forward-backward").json()
    assert op["status"] == "TRAINING_OPERATION_STATUS_FAILED"
    assert op["error"]["code"] == "TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE"
    live = world.create_session()
    pending = submit(client, live, "inference-checkpoint").json()
    world.stop_session(live, immediate=True)
    assert poll(client, live, "inference-checkpoint", pending["id"])["error"]["code"] == (
        "TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE"
    )
    assert world.session(live)["inference_checkpoints"] == []


def test_polls_to_complete_and_injected_failure(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    world.operation_polls = 0
    sid = world.create_session()
    assert submit(client, sid, "optim-step").json()["status"] == COMPLETED
    world.operation_polls = 3
    op = submit(client, sid, "forward-backward").json()
    states = [poll(client, sid, "forward-backward", op["id"])["status"] for _ in range(3)]
    assert states == ["TRAINING_OPERATION_STATUS_RUNNING"] * 2 + [COMPLETED]
    world.fail_next_operations(
        1, kind="sample", code="TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS"
    )
    fb = submit(client, sid, "forward-backward", key="fb2").json()
    sample = submit(client, sid, "sample").json()
    for _ in range(3):
        fb_done = poll(client, sid, "forward-backward", fb["id"])
        sample_done = poll(client, sid, "sample", sample["id"])
    assert fb_done["status"] == COMPLETED
    assert sample_done["status"] == "TRAINING_OPERATION_STATUS_FAILED"
    assert sample_done["error"]["code"] == "TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS"


def test_operation_404s_and_validation(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    op = submit(client, sid, "forward-backward").json()
    for path in (
        f"{RL}/training-sessions/{sid}/operations/forward-backward/nope",
        f"{RL}/training-sessions/{sid}/operations/optim-step/{op['id']}",
        f"{RL}/training-sessions/{world.create_session()}/operations/forward-backward/{op['id']}",
        f"{RL}/training-sessions/nope/operations/forward-backward/{op['id']}",
    ):
        assert client.get(path).status_code == 404, path
    assert submit(client, "nope", "optim-step").status_code == 404
    assert (
        client.post(
            f"{RL}/training-sessions/{sid}/operations/teleport", headers={"Idempotency-Key": "x"}
        ).status_code
        == 404
    )
    bad = submit(client, sid, "weights-sync", key="w", body={"weight_sync_type": "NOPE"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "weight_sync_type"
    assert submit(client, sid, "sample", key="s", body={"model_inputs": 3}).status_code == 400
    r = client.post(
        f"{RL}/training-sessions/{sid}/operations/sample",
        headers={"Idempotency-Key": "j"},
        content=b"[1]",
    )
    assert r.status_code == 400


def test_python_operation_api(world: SimulatedWorld) -> None:
    sid = world.create_session()
    op = world.submit_operation(sid, "optim-step", "k")
    assert world.operation(op["id"])["status"] == "TRAINING_OPERATION_STATUS_PENDING"
    assert world.poll_operation(sid, "optim-step", op["id"])["output"] == {"step": 1}
