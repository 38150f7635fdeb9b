"""Endpoint groups over real HTTP: sessions, model resources, checkpoints + downloads,
supported models, auth and routing errors, and chat completions (registered checkpoints
answer arithmetic better with training)."""

from __future__ import annotations

import json

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.simulator.endpoints import answer, p_correct, solve

from .conftest import API_KEY, RL


def error(r: httpx.Response) -> dict:
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


# --- auth and routing ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": API_KEY}]
)
def test_missing_or_wrong_key_is_401(sim: RLSimulator, headers: dict[str, str]) -> None:
    r = httpx.get(f"{sim.base_url}{RL}/training-sessions", headers=headers)
    assert r.status_code == 401
    assert error(r)["type"] == "authentication_error"
    assert r.headers["x-request-id"].startswith("req_")
    assert API_KEY not in r.text


def test_every_response_has_a_request_id(client: httpx.Client) -> None:
    ids = {client.get(f"{RL}/supported-models").headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3


def test_unknown_route_404_and_wrong_method_405(client: httpx.Client) -> None:
    r = client.get("/v1/rl/nothing-here")
    assert r.status_code == 404 and error(r)["type"] == "not_found_error"
    r = client.delete(f"{RL}/training-sessions")
    assert r.status_code == 405 and "GET" in r.headers["allow"]


def test_keep_alive_connection_is_reused(sim: RLSimulator) -> None:
    peers = set()
    with httpx.Client(base_url=sim.base_url, headers=sim.headers) as c:
        for _ in range(5):
            with c.stream("GET", f"{RL}/supported-models") as r:
                r.read()
                peers.add(r.extensions["network_stream"].get_extra_info("client_addr"))
    assert len(peers) == 1


# --- sessions ------------------------------------------------------------------------------------
def test_session_create_get_patch_stop(world: SimulatedWorld, client: httpx.Client) -> None:
    world.session_stop_delay = 5
    rid = world.create_model_resource()
    body = {
        "model_resources_id": rid,
        "display_name": "exp-1",
        "metadata": {"wandb": {"project": "p", "run_name": "r"}},
        "lora_config": {"rank": 16},
    }
    created = client.post(f"{RL}/training-sessions", json=body).json()
    sid = created["id"]
    assert created["display_name"] == "exp-1" and created["lora_config"]["rank"] == 16
    assert created["metadata"] == {"wandb": {"project": "p", "run_name": "r"}}
    got = client.get(f"{RL}/training-sessions/{sid}").json()
    assert got["status"] == "TRAINING_SESSION_STATUS_RUNNING"

    world.advance_clock(1)
    patch = {"display_name": "", "metadata": {"wandb": {"project": "", "group": "g"}}}
    patched = client.patch(f"{RL}/training-sessions/{sid}", json=patch).json()
    assert "display_name" not in patched
    assert patched["metadata"] == {"wandb": {"run_name": "r", "group": "g"}}
    assert patched["updated_at"] > got["updated_at"]
    unchanged = client.patch(f"{RL}/training-sessions/{sid}", json={}).json()
    assert unchanged["metadata"] == patched["metadata"]

    stopping = client.post(f"{RL}/training-sessions/{sid}/stop").json()
    assert stopping["status"] == "TRAINING_SESSION_STATUS_STOPPING"
    world.advance_clock(5)
    assert client.get(f"{RL}/training-sessions/{sid}").json()["status"] == (
        "TRAINING_SESSION_STATUS_STOPPED"
    )
    again = client.post(f"{RL}/training-sessions/{sid}/stop")
    assert again.status_code == 200 and again.json()["status"] == "TRAINING_SESSION_STATUS_STOPPED"


def test_session_create_errors(world: SimulatedWorld, client: httpx.Client) -> None:
    r = client.post(f"{RL}/training-sessions", json={})
    assert r.status_code == 400 and error(r)["param"] == "model_resources_id"
    r = client.post(f"{RL}/training-sessions", content=b"{not json")
    assert r.status_code == 400
    r = client.post(f"{RL}/training-sessions", json={"model_resources_id": "missing"})
    assert r.status_code == 404
    full = world.create_model_resource(lora=False)
    assert (
        client.post(f"{RL}/training-sessions", json={"model_resources_id": full}).status_code == 200
    )
    r = client.post(f"{RL}/training-sessions", json={"model_resources_id": full})
    assert r.status_code == 429 and error(r)["type"] == "rate_limit_error"
    stopped = world.create_model_resource(status="STOPPED")
    assert (
        client.post(f"{RL}/training-sessions", json={"model_resources_id": stopped}).status_code
        == 400
    )
    r = client.post(
        f"{RL}/training-sessions", json={"model_resources_id": full, "metadata": {"wandb": 3}}
    )
    assert r.status_code == 400


def test_resume_from_training_checkpoint(world: SimulatedWorld, client: httpx.Client) -> None:
    old = world.create_session()
    world.advance_steps(old, 30)
    tck = world.add_training_checkpoint(old)
    ick = world.add_inference_checkpoint(old)
    rid = world.create_model_resource()
    body = {"model_resources_id": rid, "resume_from_checkpoint_id": tck}
    resumed = client.post(f"{RL}/training-sessions", json=body).json()
    assert resumed["resume_from_checkpoint_id"] == tck and resumed["step"] == 30
    fresh = client.post(f"{RL}/training-sessions", json={**body, "load_optimizer": False}).json()
    assert fresh["step"] == 0
    bad = client.post(f"{RL}/training-sessions", json={**body, "resume_from_checkpoint_id": ick})
    assert bad.status_code == 400


def test_session_404s(client: httpx.Client) -> None:
    for method, path in (
        ("GET", f"{RL}/training-sessions/nope"),
        ("PATCH", f"{RL}/training-sessions/nope"),
        ("POST", f"{RL}/training-sessions/nope/stop"),
        ("GET", f"{RL}/checkpoints/nope"),
        ("GET", f"{RL}/model-resources/nope"),
    ):
        r = client.request(method, path, json={} if method == "PATCH" else None)
        assert r.status_code == 404, path
        assert error(r)["type"] == "not_found_error"


# --- model resources -----------------------------------------------------------------------------
def test_model_resource_lifecycle_over_http(world: SimulatedWorld, client: httpx.Client) -> None:
    world.resource_provision_delay = 10
    world.resource_stop_delay = 3
    body = {"base_model": "Qwen/Qwen3-8B", "lora_enabled": True, "inactive_timeout": 900,
            "compute_config": {"num_generator_replicas": 2}}  # fmt: skip
    r = client.post(f"{RL}/model-resources", json=body).json()
    rid = r["id"]
    assert (
        r["status"] == "MODEL_RESOURCES_STATUS_PENDING"
        and r["status_details"]["queue_position"] == 1
    )
    assert r["compute_config"]["num_generator_replicas"] == 2 and r["inactive_timeout"] == 900
    world.advance_clock(10)
    ready = client.get(f"{RL}/model-resources/{rid}").json()
    assert ready["status"] == "MODEL_RESOURCES_STATUS_READY"
    assert ready["expires_at"] == "2026-11-29T12:15:10Z"

    extended = client.post(
        f"{RL}/model-resources/{rid}/extend-expiry", json={"seconds": 7200}
    ).json()
    assert extended["expires_at"] == "2026-11-29T14:00:10Z"
    bad = client.post(f"{RL}/model-resources/{rid}/extend-expiry", json={"seconds": 10})
    assert bad.status_code == 400 and error(bad)["param"] == "seconds"

    sid = client.post(f"{RL}/training-sessions", json={"model_resources_id": rid}).json()["id"]
    r = client.post(f"{RL}/model-resources/{rid}/stop")
    assert r.status_code == 400 and error(r)["param"] == "force"
    stopping = client.post(f"{RL}/model-resources/{rid}/stop", params={"force": "true"}).json()
    assert stopping["status"] == "MODEL_RESOURCES_STATUS_STOPPING"
    world.advance_clock(3)
    assert (
        client.get(f"{RL}/model-resources/{rid}").json()["status"]
        == "MODEL_RESOURCES_STATUS_STOPPED"
    )
    assert world.session(sid)["status"] == "TRAINING_SESSION_STATUS_STOPPED"
    assert (
        client.post(f"{RL}/model-resources/{rid}/stop", params={"force": "true"}).status_code == 400
    )
    assert (
        client.post(f"{RL}/model-resources/{rid}/extend-expiry", json={"seconds": 60}).status_code
        == 400
    )


def test_model_resource_validation_and_cost(client: httpx.Client) -> None:
    for body, param in (
        ({"base_model": "nope/model"}, "base_model"),
        ({"base_model": "Qwen/Qwen3-8B", "inactive_timeout": 10}, "inactive_timeout"),
        ({"base_model": "Qwen/Qwen3-8B", "lora_enabled": "yes"}, "lora_enabled"),
    ):
        r = client.post(f"{RL}/model-resources", json=body)
        assert r.status_code == 400 and error(r)["param"] == param
    cost = client.post(f"{RL}/model-resources/estimate-cost", json={"base_model": "Qwen/Qwen3-8B"})
    assert cost.json()["currency"] == "USD" and cost.json()["price_per_hour"] > 0
    assert client.get(f"{RL}/model-resources").json()["data"] == []  # estimate has no side effect


def test_supported_models(client: httpx.Client) -> None:
    data = client.get(f"{RL}/supported-models").json()["data"]
    names = {m["base_model"] for m in data}
    assert "Qwen/Qwen3-8B" in names and "MiniMaxAI/MiniMax-M3" in names
    cfg = data[0]["compute_configs"][0]
    assert cfg["gpu_type"] == "B200-SXM" and "trainer_config" in cfg and "generator_config" in cfg


# --- checkpoints and downloads -------------------------------------------------------------------
def test_checkpoint_get_and_download(
    world: SimulatedWorld, client: httpx.Client, sim: RLSimulator
) -> None:
    sid = world.create_session()
    cid = world.add_inference_checkpoint(sid)
    tid = world.add_training_checkpoint(sid)
    assert client.get(f"{RL}/checkpoints/{cid}").json()["type"] == "CHECKPOINT_TYPE_INFERENCE"
    for variant, names in (
        ("CHECKPOINT_VARIANT_MERGED", ["config.json", "model.safetensors"]),
        ("CHECKPOINT_VARIANT_ADAPTER", ["adapter_config.json", "adapter_model.safetensors"]),
    ):
        files = client.get(f"{RL}/checkpoints/{cid}/download", params={"variant": variant}).json()[
            "data"
        ]
        assert [f["filename"] for f in files] == names
        for f in files:
            assert f["url"].startswith(f"{sim.base_url}/_sim/files/{cid}/")
            content = httpx.get(f["url"]).raise_for_status().content  # no Authorization needed
            assert len(content) == f["size"]
            if f["filename"].endswith(".json"):
                assert json.loads(content)["checkpoint_id"] == cid
    assert httpx.get(files[0]["url"].split("?")[0]).status_code == 403
    for params, param in (
        ({}, "variant"),
        ({"variant": "CHECKPOINT_VARIANT_BOGUS"}, "variant"),
    ):
        r = client.get(f"{RL}/checkpoints/{cid}/download", params=params)
        assert r.status_code == 400 and error(r)["param"] == param
    r = client.get(
        f"{RL}/checkpoints/{tid}/download", params={"variant": "CHECKPOINT_VARIANT_MERGED"}
    )
    assert r.status_code == 400
    full = world.create_session(lora=False)
    fck = world.add_inference_checkpoint(full)
    r = client.get(
        f"{RL}/checkpoints/{fck}/download", params={"variant": "CHECKPOINT_VARIANT_ADAPTER"}
    )
    assert r.status_code == 400
    r = client.get(
        f"{RL}/checkpoints/nope/download", params={"variant": "CHECKPOINT_VARIANT_MERGED"}
    )
    assert r.status_code == 404


# --- chat completions -----------------------------------------------------------------------------
QUESTIONS = [
    f"What is {a} + {b}? Answer with the number only." for a in range(10, 30) for b in range(40, 50)
]


def ask(client: httpx.Client, model: str, question: str) -> httpx.Response:
    return client.post(
        "/v1/chat/completions",
        json={
            "model": model,
            "temperature": 0,
            "messages": [{"role": "user", "content": question}],
        },
    )


def reg_name(world: SimulatedWorld, sid: str, index: int = -1) -> str:
    reg = world.session(sid)["inference_checkpoints"][index]["registration"]
    return reg.get("model_name") or (reg.get("adapter") or reg["model"])["id"]


def test_openai_shape(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.add_inference_checkpoint(sid)
    model = reg_name(world, sid)
    body = ask(client, model, "What is 17 + 25?").json()
    assert body["object"] == "chat.completion" and body["model"] == model
    assert body["id"].startswith("chatcmpl-") and isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert (
        choice["message"]["role"] == "assistant" and "The answer is" in choice["message"]["content"]
    )
    assert (
        body["usage"]["total_tokens"]
        == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


@pytest.mark.parametrize(
    ("shape", "lora"),
    [("current", True), ("current", False), ("object_ids", True), ("legacy", False)],
)
def test_every_exposed_name_is_servable(
    world: SimulatedWorld, client: httpx.Client, shape: str, lora: bool
) -> None:
    sid = world.create_session(registration_shape=shape, lora=lora)
    world.add_inference_checkpoint(sid)
    reg = world.session(sid)["inference_checkpoints"][0]["registration"]
    names = [reg[k] for k in ("model_name", "model_object_id", "adapter_object_id") if k in reg]
    names += [reg[k]["id"] for k in ("model", "adapter") if k in reg]
    assert names
    for name in names:
        assert ask(client, name, "What is 1 + 1?").status_code == 200


def test_unknown_models_and_bad_requests(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    world.add_inference_checkpoint(sid, registered=False)
    for model in ("Qwen/Qwen3-8B", "ml_nope", "user/whatever"):
        r = ask(client, model, "What is 1 + 1?")
        assert r.status_code == 404 and r.json()["error"]["param"] == "model"
    assert client.post("/v1/chat/completions", json={"model": "x"}).status_code == 400
    assert client.post("/v1/chat/completions", json={"messages": []}).status_code == 400


def test_registration_makes_a_model_servable(world: SimulatedWorld, client: httpx.Client) -> None:
    sid = world.create_session()
    ask(client, "ml_warm_the_index", "hi")
    cid = world.add_inference_checkpoint(sid, registered=False)
    world.register_checkpoint(cid)
    assert ask(client, reg_name(world, sid), "What is 2 + 2?").status_code == 200


def test_scores_are_deterministic_and_rise_with_step(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    sid = world.create_session(registration_shape="legacy")
    world.add_inference_checkpoint(sid)
    world.advance_steps(sid, 400)
    world.add_inference_checkpoint(sid)
    early, late = reg_name(world, sid, 0), reg_name(world, sid, 1)

    def score(model: str) -> float:
        right = 0
        for q in QUESTIONS[:60]:
            text = ask(client, model, q).json()["choices"][0]["message"]["content"]
            right += text == f"The answer is {solve(q)}."
        return right / 60

    first = score(early)
    assert first == score(early)
    assert 0.15 < first < 0.6 and score(late) > 0.75


def test_answer_function() -> None:
    assert p_correct(0) == pytest.approx(0.35) and 0.94 < p_correct(10**6) <= 0.95
    assert p_correct(10) < p_correct(100) < p_correct(1000)
    assert (
        solve("What is 6 x 7?") == 42 and solve("what is 9 - 12") == -3 and solve("hello") is None
    )
    assert solve("What is 7 / 2?") == 3.5 and solve("What is 1 / 0?") is None
    outcomes = {answer(0, "m", 0, q) == f"The answer is {solve(q)}." for q in QUESTIONS}
    assert outcomes == {True, False}
    assert answer(1, "m", 5, "What is 3 + 4?") == answer(1, "m", 5, "What is 3 + 4?")
    assert "only answer arithmetic" in answer(0, "m", 0, "tell me a joke")
