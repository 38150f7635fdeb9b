"""The 29 endpoints of the Together RL API (§1.1 of the reference), as thin HTTP adapters.

Each handler validates the request the way the service does (400 with ``param`` set), calls one
world method and returns the world's wire bytes; anything stateful lives in the world. Downloads
are in ``files.py`` because they also serve the presigned file URLs.
"""

from __future__ import annotations

from typing import Any

from .constants import (
    CHECKPOINT_TYPES,
    OPERATION_KINDS,
    RESOURCE_STATUSES,
    SESSION_STATUSES,
    SUPPORTED_MODEL_NAMES,
    SUPPORTED_MODELS,
)
from .errors import bad_request
from .routing import Handler, Request, Response, Router, json_response
from .world import SimulatedWorld

RL = "/v1/rl"
GPU_TYPES = ("B200-SXM", "H100-80GB")


def parse_limit(req: Request) -> int:
    """``limit`` 1-100, default 20; anything else is a 400 on ``param: "limit"``."""
    raw = req.arg("limit")
    if raw is None or raw == "":
        return 20
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise bad_request(
            f"limit must be an integer between 1 and 100, got {raw!r}",
            param="limit",
            code="invalid_limit",
        )
    return limit


def parse_statuses(req: Request, allowed: tuple[str, ...]) -> list[str] | None:
    """``status`` filter: comma-joined (SDK style) or repeated keys; unknown values → 400."""
    values = req.args("status")
    for v in values:
        if v not in allowed:
            raise bad_request(
                f"invalid status filter value {v!r}", param="status", code="invalid_status"
            )
    return values or None


def parse_bool(req: Request, name: str) -> bool:
    raw = (req.arg(name) or "").lower()
    if raw in ("", "false", "0"):
        return False
    if raw in ("true", "1"):
        return True
    raise bad_request(f"{name} must be true or false", param=name)


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"{name} must be a string", param=name)
    return value


def _opt_int(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)  # int64 fields may arrive as strings, as the service emits them
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise bad_request(f"{name} must be an integer between {lo} and {hi}", param=name)
    return value


def _wandb(body: dict[str, Any]) -> dict[str, str] | None:
    metadata = body.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object", param="metadata")
    wandb = metadata.get("wandb")
    if wandb is None:
        return None
    if not isinstance(wandb, dict) or not all(isinstance(v, str) for v in wandb.values()):
        raise bad_request("metadata.wandb must be an object of strings", param="metadata.wandb")
    return wandb


class RLEndpoints:
    """Handlers for ``/v1/rl/*`` bound to one world."""

    def __init__(self, world: SimulatedWorld) -> None:
        self.world = world

    def register(self, router: Router) -> None:
        """Add the 29 routes (minus download, which ``files.py`` adds) to ``router``."""
        add = router.add
        add("POST", f"{RL}/training-sessions", self.create_session)
        add("GET", f"{RL}/training-sessions", self.list_sessions)
        add("GET", f"{RL}/training-sessions/{{id}}", self.get_session)
        add("PATCH", f"{RL}/training-sessions/{{id}}", self.patch_session)
        add("POST", f"{RL}/training-sessions/{{id}}/stop", self.stop_session)
        for kind in OPERATION_KINDS:
            base = f"{RL}/training-sessions/{{id}}/operations/{kind}"
            add("POST", base, self._submit(kind))
            add("GET", base + "/{id}", self._poll(kind))
        add("GET", f"{RL}/checkpoints", self.list_checkpoints)
        add("GET", f"{RL}/checkpoints/{{id}}", self.get_checkpoint)
        add("POST", f"{RL}/model-resources", self.create_resource)
        add("GET", f"{RL}/model-resources", self.list_resources)
        add("GET", f"{RL}/model-resources/{{id}}", self.get_resource)
        add("POST", f"{RL}/model-resources/estimate-cost", self.estimate_cost)
        add("POST", f"{RL}/model-resources/{{id}}/extend-expiry", self.extend_expiry)
        add("POST", f"{RL}/model-resources/{{id}}/stop", self.stop_resource)
        add("GET", f"{RL}/supported-models", self.supported_models)

    # --- sessions --------------------------------------------------------------------------
    def create_session(self, req: Request) -> Response:
        body = req.json(required=True)
        resource_id = body.get("model_resources_id")
        if not isinstance(resource_id, str) or not resource_id:
            raise bad_request("model_resources_id is required", param="model_resources_id")
        lora = body.get("lora_config")
        if lora is not None and not isinstance(lora, dict):
            raise bad_request("lora_config must be an object", param="lora_config")
        load_optimizer = body.get("load_optimizer", True)
        if not isinstance(load_optimizer, bool):
            raise bad_request("load_optimizer must be a boolean", param="load_optimizer")
        w = self.world
        with w.transaction():
            sid = w.request_session(
                resource_id,
                display_name=_opt_str(body, "display_name") or None,
                wandb=_wandb(body),
                lora_config=lora,
                resume_from_checkpoint_id=_opt_str(body, "resume_from_checkpoint_id"),
                load_optimizer=load_optimizer,
            )
            return json_response(w.session_json(sid))

    def list_sessions(self, req: Request) -> Response:
        created_by = req.arg("created_by")
        return json_response(
            self.world.page_sessions(
                limit=parse_limit(req),
                after=req.arg("after") or None,
                statuses=parse_statuses(req, SESSION_STATUSES),
                resource_id=req.arg("model_resources_id") or None,
                created_by=self.world.user_id if created_by == "me" else created_by or None,
            )
        )

    def get_session(self, req: Request) -> Response:
        return json_response(self.world.session_json(req.ids[0]))

    def patch_session(self, req: Request) -> Response:
        body = req.json()
        w = self.world
        with w.transaction():
            w.patch_session(
                req.ids[0], display_name=_opt_str(body, "display_name"), wandb=_wandb(body)
            )
            return json_response(w.session_json(req.ids[0]))

    def stop_session(self, req: Request) -> Response:
        w = self.world
        with w.transaction():
            w.stop_session(req.ids[0])
            return json_response(w.session_json(req.ids[0]))

    # --- operations ------------------------------------------------------------------------
    def _submit(self, kind: str) -> Handler:
        def submit(req: Request) -> Response:
            key = req.headers.get("Idempotency-Key")
            body = req.json() if req.body.strip() else None
            return json_response(self.world.submit_operation(req.ids[0], kind, key, body))

        return submit

    def _poll(self, kind: str) -> Handler:
        def poll(req: Request) -> Response:
            return json_response(self.world.poll_operation(req.ids[0], kind, req.ids[1]))

        return poll

    # --- checkpoints -----------------------------------------------------------------------
    def list_checkpoints(self, req: Request) -> Response:
        ctype = req.arg("type") or None
        if ctype is not None and ctype not in CHECKPOINT_TYPES:
            raise bad_request(f"invalid checkpoint type {ctype!r}", param="type")
        return json_response(
            self.world.page_checkpoints(
                limit=parse_limit(req),
                after=req.arg("after") or None,
                session_id=req.arg("session_id") or None,
                type=ctype,
                base_model=req.arg("base_model") or None,
            )
        )

    def get_checkpoint(self, req: Request) -> Response:
        return json_response(self.world.checkpoint_json(req.ids[0]))

    # --- model resources -------------------------------------------------------------------
    def _resource_body(self, req: Request) -> dict[str, Any]:
        body = req.json(required=True)
        base_model = body.get("base_model")
        if base_model not in SUPPORTED_MODEL_NAMES:
            raise bad_request(f"unsupported base_model {base_model!r}", param="base_model")
        lora = body.get("lora_enabled", True)
        if not isinstance(lora, bool):
            raise bad_request("lora_enabled must be a boolean", param="lora_enabled")
        compute = body.get("compute_config") or {}
        if not isinstance(compute, dict) or compute.get("gpu_type", GPU_TYPES[0]) not in GPU_TYPES:
            raise bad_request("invalid compute_config", param="compute_config")
        replicas = _opt_int(compute, "num_generator_replicas", 0, 64)
        timeout = _opt_int(body, "inactive_timeout", 300, 86_400)
        optimizer = body.get("optimizer_config")
        if optimizer is not None and not isinstance(optimizer, dict):
            raise bad_request("optimizer_config must be an object", param="optimizer_config")
        return {
            "base_model": base_model,
            "lora": lora,
            "num_generator_replicas": 1 if replicas is None else replicas,
            "inactive_timeout": 3600 if timeout is None else timeout,
            "optimizer": optimizer or {"adam": {}},
            "base_weights_ref": _opt_str(body, "base_weights_ref"),
            "gpu_type": compute.get("gpu_type", GPU_TYPES[0]),
        }

    def create_resource(self, req: Request) -> Response:
        params = self._resource_body(req)
        w = self.world
        with w.transaction():
            rid = w.create_model_resource(status="PENDING", **params)
            return json_response(w.resource_json(rid))

    def list_resources(self, req: Request) -> Response:
        created_by = req.arg("created_by")
        return json_response(
            self.world.page_resources(
                limit=parse_limit(req),
                after=req.arg("after") or None,
                statuses=parse_statuses(req, RESOURCE_STATUSES),
                created_by=self.world.user_id if created_by == "me" else created_by or None,
            )
        )

    def get_resource(self, req: Request) -> Response:
        return json_response(self.world.resource_json(req.ids[0]))

    def estimate_cost(self, req: Request) -> Response:
        p = self._resource_body(req)
        price = self.world.price_per_hour(
            p["base_model"], lora=p["lora"], replicas=p["num_generator_replicas"]
        )
        return json_response({"currency": "USD", "price_per_hour": price})

    def extend_expiry(self, req: Request) -> Response:
        seconds = _opt_int(req.json(required=True), "seconds", 60, 86_400)
        if seconds is None:
            raise bad_request("seconds is required", param="seconds")
        w = self.world
        with w.transaction():
            w.extend_expiry(req.ids[0], seconds)
            return json_response(w.resource_json(req.ids[0]))

    def stop_resource(self, req: Request) -> Response:
        w = self.world
        with w.transaction():
            w.stop_model_resource(req.ids[0], force=parse_bool(req, "force"))
            return json_response(w.resource_json(req.ids[0]))

    def supported_models(self, req: Request) -> Response:
        return json_response({"data": list(SUPPORTED_MODELS)})
