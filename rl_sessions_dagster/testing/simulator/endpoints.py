"""The Together RL API as thin HTTP adapters: each validates as the service does (400 with
``param``) and answers one world call's bytes; download URLs need only their signature, like
presigned ones. Chat completions answer arithmetic, right more often as the step grows, per
(seed, model, question): evaluations are reproducible and scores rise with training."""

from __future__ import annotations

import hmac
import json
import operator
import random
import re
from functools import partial
from hashlib import blake2b
from typing import Any

from . import wire
from .routing import Handler, Request, Response, Router, json_response
from .wire import SimulatorError, bad_request, not_found, supported_model
from .world import SimulatedWorld, file_size

RL = "/v1/rl"


def _limit(req: Request) -> int:
    raw = req.arg("limit")
    if not raw:
        return 20
    if not (raw.isdigit() and 1 <= int(raw) <= 100):
        message = f"limit must be an integer between 1 and 100, got {raw!r}"
        raise bad_request(message, "limit", "invalid_limit")
    return int(raw)


def _statuses(req: Request, allowed: tuple[str, ...]) -> list[str] | None:
    """Comma-joined (SDK style) or repeated."""
    values = req.args("status")
    for v in values:
        if v not in allowed:
            raise bad_request(f"invalid status filter value {v!r}", "status", "invalid_status")
    return values or None


def _int(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)  # int64 fields may arrive as strings, as the service emits them
    valid = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    if value is not None and not valid:
        raise bad_request(f"{name} must be an integer between {lo} and {hi}", param=name)
    return value


def _field(body: dict[str, Any], name: str, kind: type = str, what: str = "a string") -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise bad_request(f"{name} must be {what}", param=name)
    return value


def _wandb(body: dict[str, Any]) -> dict[str, str] | None:
    wandb = (_field(body, "metadata", dict, "an object") or {}).get("wandb")
    strings = isinstance(wandb, dict) and all(isinstance(v, str) for v in wandb.values())
    if wandb is not None and not strings:
        raise bad_request("metadata.wandb must be an object of strings", param="metadata.wandb")
    return wandb


def _resource_body(req: Request) -> dict[str, Any]:
    """The body of create and estimate-cost as ``create_model_resource`` keywords."""
    body = req.json(required=True)
    if body.get("base_model") not in wire.MODELS:
        raise bad_request(f"unsupported base_model {body.get('base_model')!r}", param="base_model")
    lora = body.get("lora_enabled", True)
    if not isinstance(lora, bool):
        raise bad_request("lora_enabled must be a boolean", param="lora_enabled")
    compute = body.get("compute_config") or {}
    gpu = compute.get("gpu_type", wire.GPU_TYPES[0]) if isinstance(compute, dict) else None
    if gpu not in wire.GPU_TYPES:
        raise bad_request("invalid compute_config", param="compute_config")
    replicas = _int(compute, "num_generator_replicas", 0, 64)
    timeout = _int(body, "inactive_timeout", 300, 86_400)
    return {
        "base_model": body["base_model"],
        "lora": lora,
        "num_generator_replicas": 1 if replicas is None else replicas,
        "inactive_timeout": 3600 if timeout is None else timeout,
        "optimizer": _field(body, "optimizer_config", dict, "an object") or {"adam": {}},
        "base_weights_ref": _field(body, "base_weights_ref"),
        "gpu_type": gpu,
    }


_TIMES = "\u00d7"  # the multiplication sign
_OPS = {"+": operator.add, "-": operator.sub} | dict.fromkeys(("*", "x", _TIMES), operator.mul)
_QUESTION = re.compile(r"(-?\d+)\s*([-+*/x" + _TIMES + r"])\s*(-?\d+)")


def p_correct(step: int) -> float:
    step = max(0, step)
    return min(0.95, 0.35 + 0.6 * step / (step + 40))


def _unit(*parts: object) -> float:
    digest = blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def solve(question: str) -> int | float | None:
    m = _QUESTION.search(question)
    if m is None:
        return None
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    if op in _OPS:
        return _OPS[op](a, b)
    if b == 0:
        return None
    return a // b if a % b == 0 else round(a / b, 2)


def answer(seed: int, model: str, step: int, question: str) -> str:
    """Right with probability :func:`p_correct`, else off by a small non-zero amount."""
    truth = solve(question)
    if truth is None:
        return f"I am a simulated model ({model}, step {step}); I only answer arithmetic."
    if _unit(seed, model, question, "correct") < p_correct(step):
        value = truth
    else:
        delta = 1 + int(_unit(seed, model, question, "delta") * 9)
        value = truth + (delta if _unit(seed, model, question, "sign") < 0.5 else -delta)
    return f"The answer is {value}."


def chat_completion(world: SimulatedWorld, req: Request) -> Response:
    body = req.json(required=True)
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty array", param="messages")
    if body.get("stream"):
        raise bad_request("the simulator does not stream", param="stream")
    found = world.chat_model(model)
    if found is None:
        message = f"model {model!r} is not a registered checkpoint"
        raise SimulatorError(404, message, param="model", code="model_not_found")
    ckpt_id, step = found
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    content = answer(world.seed, model, step, str(users[-1].get("content") or "") if users else "")
    prompt = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
    completion = len(content.split())
    cid = blake2b(f"{req.request_id}:{ckpt_id}".encode(), digest_size=12).hexdigest()
    return json_response({
        "id": f"chatcmpl-{cid}",
        "object": "chat.completion",
        "created": int(world.now().timestamp()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    })  # fmt: skip


def add_api_routes(router: Router, w: SimulatedWorld, secret: bytes) -> None:
    """``secret`` keys the file URLs."""

    def page_args(req: Request, statuses: tuple[str, ...]) -> dict[str, Any]:
        """What session and resource lists share; ``created_by=me`` is the world's user."""
        who = req.arg("created_by")
        return {"limit": _limit(req), "after": req.arg("after") or None,
                "statuses": _statuses(req, statuses), "created_by": w.user_id if who == "me" else who or None}  # fmt: skip

    def then(call: Any, show: Any) -> Handler:
        """A change and the object as changed (the one it made, else the path's), under one lock."""

        def handler(req: Request) -> Response:
            with w.transaction():
                return json_response(show(call(req) or req.ids[0]))

        return handler

    def create_session(req: Request) -> str:
        body = req.json(required=True)
        resource_id = body.get("model_resources_id")
        if not isinstance(resource_id, str) or not resource_id:
            raise bad_request("model_resources_id is required", param="model_resources_id")
        return w.request_session(
            resource_id,
            display_name=_field(body, "display_name") or None,
            wandb=_wandb(body),
            lora_config=_field(body, "lora_config", dict, "an object"),
            resume_from_checkpoint_id=_field(body, "resume_from_checkpoint_id"),
            load_optimizer=_field(body, "load_optimizer", bool, "a boolean") is not False,
        )

    def list_sessions(req: Request) -> Response:
        args = page_args(req, wire.SESSION_STATUSES)
        return json_response(
            w.page_sessions(resource_id=req.arg("model_resources_id") or None, **args)
        )

    def list_resources(req: Request) -> Response:
        return json_response(w.page_resources(**page_args(req, wire.RESOURCE_STATUSES)))

    def patch_session(req: Request) -> None:
        body = req.json()
        w.patch_session(req.ids[0], display_name=_field(body, "display_name"), wandb=_wandb(body))

    def submit(kind: str) -> Handler:
        def handler(req: Request) -> Response:
            body = req.json() if req.body.strip() else None
            key = req.headers.get("Idempotency-Key")
            return json_response(w.submit_operation(req.ids[0], kind, key, body))

        return handler

    def poll(kind: str) -> Handler:
        return lambda req: json_response(w.poll_operation(req.ids[0], kind, req.ids[1]))

    def list_checkpoints(req: Request) -> Response:
        ctype = req.arg("type") or None
        if ctype not in (None, wire.CHECKPOINT_INFERENCE, wire.CHECKPOINT_TRAINING):
            raise bad_request(f"invalid checkpoint type {ctype!r}", param="type")
        return json_response(w.page_checkpoints(
            limit=_limit(req), after=req.arg("after") or None, session_id=req.arg("session_id") or None,
            type=ctype, base_model=req.arg("base_model") or None,
        ))  # fmt: skip

    def estimate_cost(req: Request) -> Response:
        p = _resource_body(req)
        price = w.price_per_hour(p["base_model"], lora=p["lora"], replicas=p["num_generator_replicas"])  # fmt: skip
        return json_response({"currency": "USD", "price_per_hour": price})

    def extend_expiry(req: Request) -> None:
        seconds = _int(req.json(required=True), "seconds", 60, 86_400)
        if seconds is None:
            raise bad_request("seconds is required", param="seconds")
        w.extend_expiry(req.ids[0], seconds)

    def stop_resource(req: Request) -> None:
        force = (req.arg("force") or "").lower()
        if force not in ("", "false", "0", "true", "1"):
            raise bad_request("force must be true or false", param="force")
        w.stop_model_resource(req.ids[0], force=force in ("true", "1"))

    def signature(ckpt: str, name: str) -> str:
        return blake2b(f"{ckpt}/{name}".encode(), key=secret, digest_size=12).hexdigest()

    def download(req: Request) -> Response:
        ckpt = req.ids[0]
        files = w.download_files(ckpt, req.arg("variant"))
        url = f"{req.base_url}/_sim/files/{ckpt}/"
        data = [{"filename": name, "url": f"{url}{name}?sig={signature(ckpt, name)}", "size": size}
                for name, size in files]  # fmt: skip
        return json_response({"data": data})

    def serve_file(req: Request) -> Response:
        ckpt, name = req.ids
        if not hmac.compare_digest(req.arg("sig") or "", signature(ckpt, name)):
            raise SimulatorError(403, "invalid or missing signature", param="sig")
        if not any(name in names for names in wire.VARIANT_FILES.values()):
            raise not_found("file", name)
        w.checkpoint_json(ckpt)  # 404 for an unknown checkpoint
        size = file_size(ckpt, name)
        if name.endswith(".json"):  # JSON padded to the file's size, else seeded random weights
            text = json.dumps({"checkpoint_id": ckpt, "file": name, "simulated": True})
            content = text.encode().ljust(size, b" ")
        else:
            content = random.Random(f"{ckpt}/{name}").randbytes(size)
        return Response(200, content, content_type="application/octet-stream")

    sessions, resources = f"{RL}/training-sessions", f"{RL}/model-resources"
    add = router.add
    add("POST", sessions, then(create_session, w.session_json))
    add("GET", sessions, list_sessions)
    add("GET", sessions + "/{id}", lambda req: json_response(w.session_json(req.ids[0])))
    add("PATCH", sessions + "/{id}", then(patch_session, w.session_json))
    add("POST", sessions + "/{id}/stop", then(lambda r: w.stop_session(r.ids[0]), w.session_json))
    for kind in wire.OPERATION_KINDS:
        add("POST", f"{sessions}/{{id}}/operations/{kind}", submit(kind))
        add("GET", f"{sessions}/{{id}}/operations/{kind}/{{id}}", poll(kind))
    add("GET", f"{RL}/checkpoints", list_checkpoints)
    add("GET", f"{RL}/checkpoints/{{id}}", lambda req: json_response(w.checkpoint_json(req.ids[0])))
    add("GET", f"{RL}/checkpoints/{{id}}/download", download)
    add("GET", "/_sim/files/{id}/{id}", serve_file)
    create_resource = partial(w.create_model_resource, status="PENDING")
    add("POST", resources, then(lambda r: create_resource(**_resource_body(r)), w.resource_json))
    add("GET", resources, list_resources)
    add("GET", resources + "/{id}", lambda req: json_response(w.resource_json(req.ids[0])))
    add("POST", resources + "/estimate-cost", estimate_cost)
    add("POST", resources + "/{id}/extend-expiry", then(extend_expiry, w.resource_json))
    add("POST", resources + "/{id}/stop", then(stop_resource, w.resource_json))
    models = {"data": [supported_model(m) for m in wire.MODELS]}
    add("GET", f"{RL}/supported-models", lambda req: json_response(models))
    add("POST", "/v1/chat/completions", lambda req: chat_completion(w, req))
