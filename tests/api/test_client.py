"""RLSessionsClient: configuration, and every one of the 29 endpoints against the simulator."""

from __future__ import annotations

import httpx
import pytest

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient, SessionStatus
from rl_sessions_dagster.api.client import OPERATION_KINDS
from rl_sessions_dagster.api.enums import CheckpointType, ModelResourceStatus, OperationStatus
from rl_sessions_dagster.api.errors import (
    BadRequestError,
    ConfigurationError,
    DeadlineExceeded,
    NotFoundError,
)
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.version import __version__

from .conftest import KEY

# -- configuration ---------------------------------------------------------------------------------


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    monkeypatch.delenv("TOGETHER_BASE_URL", raising=False)


def test_missing_key_names_the_env_var(no_env: None) -> None:
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        RLSessionsClient()
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        RLSessionsClient("")


def test_key_and_base_url_fall_back_to_env(no_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with RLSessionsClient(KEY) as client:
        assert client.base_url == "https://api.together.ai"
    monkeypatch.setenv("TOGETHER_API_KEY", KEY)
    monkeypatch.setenv("TOGETHER_BASE_URL", "https://proxy.example/together/v1/")
    with RLSessionsClient() as client:
        assert client.base_url == "https://proxy.example/together"
        assert client._http.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://api.together.ai", "https://api.together.ai"),
        ("https://api.together.ai/", "https://api.together.ai"),
        ("https://api.together.ai/v1", "https://api.together.ai"),
        ("https://api.together.ai/v1/", "https://api.together.ai"),
        ("  HTTPS://API.Together.ai/v1  ", "https://api.together.ai"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("http://127.3.4.5:9", "http://127.3.4.5:9"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:8000/", "http://[::1]:8000"),
    ],
)
def test_base_url_is_normalised(given: str, expected: str) -> None:
    with RLSessionsClient(KEY, base_url=given) as client:
        assert client.base_url == expected


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("http://api.together.ai", "plain http"),
        ("http://10.0.0.5:8000", "plain http"),
        ("http://127.0.0.1.evil.example", "plain http"),
        ("ftp://api.together.ai", "scheme"),
        ("api.together.ai", "scheme"),
        ("https://", "no host"),
        (f"https://user:{KEY}@api.together.ai", "credentials"),
        ("https://api.together.ai/v1?x=1", "query"),
    ],
)
def test_bad_base_urls_are_refused_at_construction(given: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason) as info:
        RLSessionsClient(KEY, base_url=given)
    assert KEY not in str(info.value)


def test_repr_and_vars_do_not_show_the_key() -> None:
    with RLSessionsClient(KEY, user_agent_extra="my-app/2") as client:
        assert repr(client) == "RLSessionsClient(base_url='https://api.together.ai')"
        assert KEY not in repr(client) and KEY not in str(client)
        agent = client._http.headers["user-agent"]
        assert agent.startswith(f"rl-sessions-dagster/{__version__} httpx/")
        assert " python/" in agent and agent.endswith(" my-app/2")


def test_close_leaves_a_caller_owned_http_client_open() -> None:
    own = httpx.Client()
    with RLSessionsClient(KEY, http_client=own) as client:
        assert client._http is own and own.headers["authorization"] == f"Bearer {KEY}"
    assert not own.is_closed
    own.close()


# -- the 29 endpoints --------------------------------------------------------------------------------

S = "/v1/rl/training-sessions"
R = "/v1/rl/model-resources"
ALL_ENDPOINTS = {
    f"POST {S}", f"GET {S}", f"GET {S}/{{id}}", f"PATCH {S}/{{id}}", f"POST {S}/{{id}}/stop",
    *(f"POST {S}/{{id}}/operations/{kind}" for kind in OPERATION_KINDS),
    *(f"GET {S}/{{id}}/operations/{kind}/{{id}}" for kind in OPERATION_KINDS),
    "GET /v1/rl/checkpoints", "GET /v1/rl/checkpoints/{id}", "GET /v1/rl/checkpoints/{id}/download",
    f"POST {R}", f"GET {R}", f"GET {R}/{{id}}", f"POST {R}/estimate-cost",
    f"POST {R}/{{id}}/extend-expiry", f"POST {R}/{{id}}/stop",
    "GET /v1/rl/supported-models",
}  # fmt: skip


def test_every_endpoint_round_trips_through_the_simulator(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    assert len(ALL_ENDPOINTS) == 29
    models = client.list_supported_models()
    base_model = models[0].base_model
    estimate = client.estimate_model_resource_cost(base_model, lora_enabled=True)
    assert estimate.currency and estimate.price_per_hour and estimate.price_per_hour > 0

    resource = client.create_model_resource(
        base_model, lora_enabled=True, compute_config={"num_generator_replicas": 1},
        inactive_timeout=1800,
    )  # fmt: skip
    assert client.get_model_resource(resource.id).status is ModelResourceStatus.READY
    assert [r.id for r in client.list_model_resources(status="READY")] == [resource.id]
    assert client.extend_model_resource_expiry(resource.id, 600).expires_at is not None

    session = client.create_session(
        resource.id, display_name="run-1", metadata={"wandb": {"project": "p"}},
        lora_config={"rank": 8},
    )  # fmt: skip
    assert session.model_resources_id == resource.id and session.lora_config
    assert session.lora_config.rank == 8 and session.wandb_url is None
    assert client.get_session(session.id).status is SessionStatus.RUNNING
    assert client.update_session(session.id, display_name="run-1b").display_name == "run-1b"
    assert [s.id for s in client.list_sessions(model_resources_id=resource.id)] == [session.id]

    sid = session.id
    submitted = [
        client.forward_backward(sid, loss={"loss_type": "LOSS_TYPE_CROSS_ENTROPY"}, samples=[]),
        client.custom_forward_backward(sid, gradients=[], samples=[]),
        client.optim_step(sid, adam_params={"learning_rate": 1e-5}),
        client.weights_sync(sid, weight_sync_type="WEIGHT_SYNC_TYPE_SYNCHRONOUS"),
        client.sample(sid, model_inputs=[{"chunks": []}], num_samples=2),
        client.create_inference_checkpoint(sid),
        client.create_training_checkpoint(sid),
    ]
    assert [op.kind for op in submitted] == list(OPERATION_KINDS)
    for op in submitted:
        assert op.kind is not None
        done = client.get_operation(sid, op.kind, op.id)  # type: ignore[arg-type]
        assert done.status is OperationStatus.COMPLETED, done

    checkpoints = list(client.list_checkpoints(session_id=sid))
    assert {c.type for c in checkpoints} == {CheckpointType.INFERENCE, CheckpointType.TRAINING}
    inference = next(c for c in checkpoints if c.type is CheckpointType.INFERENCE)
    assert client.get_checkpoint(inference.id).session_id == sid
    files = client.get_checkpoint_download(inference.id, "adapter").data
    assert files and all(f.url.startswith(sim.base_url) and f.size for f in files)

    assert client.stop_session(sid).status in (SessionStatus.STOPPING, SessionStatus.STOPPED)
    assert client.stop_model_resource(resource.id).status is not ModelResourceStatus.READY

    assert set(sim.requests.counts()) == ALL_ENDPOINTS
    assert sim.requests.count(status=200) == len(sim.requests)


def test_bodies_and_queries_reach_the_server_as_sent(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    resource_id = sim.world.create_model_resource()
    session = client.create_session(
        resource_id, display_name="d", metadata={"wandb": {"entity": "e", "project": "p"}}
    )
    stored = sim.world.session(session.id)
    assert stored["display_name"] == "d" and stored["metadata"]["wandb"]["entity"] == "e"
    assert client.update_session(session.id, display_name="").display_name in (None, "")

    ck = sim.world.add_inference_checkpoint(session.id)
    client.get_checkpoint_download(ck, "merged")
    last = sim.requests.last("GET", "/v1/rl/checkpoints/{id}/download")
    assert last is not None and last.param("variant") == "CHECKPOINT_VARIANT_MERGED"

    with pytest.raises(BadRequestError, match="active session"):
        client.stop_model_resource(resource_id)  # no force while a session runs
    stopped = client.stop_model_resource(resource_id, force=True)
    assert stopped.status is not ModelResourceStatus.READY
    forced = sim.requests.last("POST", "/v1/rl/model-resources/{id}/stop")
    assert forced is not None and forced.param("force") == "true"
    assert sim.world.session(session.id)["status"] != "TRAINING_SESSION_STATUS_RUNNING"


def test_ids_are_one_path_segment_and_must_not_be_empty(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    with pytest.raises(NotFoundError):
        client.get_session("../model-resources")
    assert sim.requests.last() is not None
    assert sim.requests.last().path == "/v1/rl/training-sessions/..%2Fmodel-resources"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="session_id"):
        client.get_session("")
    with pytest.raises(ValueError, match="operation kind"):
        client.submit_operation("s", "backward")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seconds"):
        client.extend_model_resource_expiry("r", 0)
    assert len(sim.requests) == 1


def test_operation_submits_carry_an_idempotency_key(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    first = client.optim_step(sid)
    second = client.optim_step(sid)
    assert first.id != second.id  # a new logical call gets a new key
    again = client.optim_step(sid, idempotency_key="my-key")
    same = client.optim_step(sid, idempotency_key="my-key")
    assert again.id == same.id  # the server deduplicates on the key
    keys = [r.idempotency_key for r in sim.requests.records("POST")]
    assert keys[2:] == ["my-key", "my-key"] and len(set(keys[:2])) == 2 and all(keys)


def test_wait_for_operation_polls_until_done(sim: RLSimulator) -> None:
    sim.world.operation_polls = 3
    sid = sim.world.create_session()
    sleeps: list[float] = []
    policy = RetryPolicy(sleep=sleeps.append)
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=policy) as client:
        op = client.create_inference_checkpoint(sid)
        done = client.wait_for_operation(sid, "inference-checkpoint", op.id, poll_interval=0.25)
    assert done.status is OperationStatus.COMPLETED and done.checkpoint is not None
    assert sleeps == [0.25, 0.25]
    assert sim.requests.count("GET", f"{S}/{{id}}/operations/inference-checkpoint/{{id}}") == 3


def test_wait_for_operation_gives_up_at_its_timeout(sim: RLSimulator) -> None:
    sim.world.operation_polls = 1000
    sid = sim.world.create_session()
    now = [0.0]
    policy = RetryPolicy(clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=policy) as client:
        op = client.optim_step(sid)
        with pytest.raises(DeadlineExceeded, match="still TRAINING_OPERATION_STATUS_RUNNING"):
            client.wait_for_operation(sid, "optim-step", op.id, poll_interval=0.4, timeout=1.0)
    assert sim.requests.count("GET", f"{S}/{{id}}/operations/optim-step/{{id}}") == 3
