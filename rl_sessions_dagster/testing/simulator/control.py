"""``/_sim/*``: an unauthenticated JSON control API (bind to 127.0.0.1) so another process can
drive the world. Each route is one call whose keywords are the JSON body; calls on an object
answer ``{"ok": true, "result": ..., <kind>: <its wire JSON>}``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from .faults import FaultPlan, FaultRule
from .lifecycle import DEFAULT
from .requestlog import RequestLog
from .routing import Handler, Request, Response, Router, json_response
from .wire import bad_request, fmt_ts
from .world import SimulatedWorld

_FAULT_FIELDS = {f.name for f in fields(FaultRule) if f.init} - {"pattern"}
_SESSION_FIELDS = ("display_name", "wandb", "created_by", "registration_shape", "int64_as_string",
                   "status", "fail_at_creation", "base_model", "lora", "lora_config")  # fmt: skip
_RESOURCE_FIELDS = ("base_model", "lora", "inactive_timeout", "status", "created_by", "gpu_type")
_POPULATE_FIELDS = ("n_sessions", "checkpoints_per_session", "active", "seed", "days")
Body = dict[str, Any]
Call = Callable[[str, Body], Any]  # (id in the path, body) -> result


def _pick(body: Body, *names: str) -> Body:
    return {n: body[n] for n in names if n in body}


def add_control_routes(
    router: Router, w: SimulatedWorld, faults: FaultPlan, requests: RequestLog
) -> None:
    shows = dict(session=w.session, resource=w.model_resource, checkpoint=w.checkpoint)

    def guarded(fn: Callable[[Request, Body], Any]) -> Handler:
        """Run under the world's lock; bad keywords or values are the caller's 400, not a 500."""

        def handler(req: Request) -> Response:
            body = req.json()
            try:
                with w.transaction():
                    return json_response(fn(req, body))
            except (KeyError, TypeError, ValueError) as exc:
                raise bad_request(f"invalid control request: {exc!r}") from None

        return handler

    def call(fn: Callable[[Body], Any]) -> Handler:
        return guarded(lambda req, body: {"ok": True, "result": fn(body)})

    def on(kind: str, fn: Call) -> Handler:
        """A call on the object the path names; answers with it as changed."""

        def run(req: Request, body: Body) -> Any:
            result = fn(req.ids[0], body)
            return {"ok": True, "result": result, kind: shows[kind](req.ids[0])}

        return guarded(run)

    def create(kind: str, fn: Callable[[Request, Body], str]) -> Handler:
        return guarded(lambda req, body: shows[kind](fn(req, body)))

    def add_checkpoint(req: Request, body: Body) -> str:
        sid, kwargs = req.ids[0], _pick(body, "step", "registered")
        if body.get("type", "inference") == "training":
            return w.add_training_checkpoint(sid, **kwargs)
        shape = body.get("registration_shape", DEFAULT)
        return w.add_inference_checkpoint(sid, registration_shape=shape, **kwargs)

    def add_fault(req: Request, body: Body) -> Body:
        unknown = set(body) - _FAULT_FIELDS - {"pattern"}
        if "pattern" not in body or unknown:
            raise bad_request(f"a fault needs 'pattern' and known fields (unknown: {sorted(unknown)})")  # fmt: skip
        try:
            rule = faults.add(str(body["pattern"]), **_pick(body, *_FAULT_FIELDS))
        except (TypeError, ValueError) as exc:
            raise bad_request(f"invalid fault: {exc}") from None
        return {"ok": True, "fault": rule.label()}

    def stats(req: Request, body: Body) -> Body:
        log = {"total": len(requests), "by_route": requests.counts(), "faults": requests.fault_counts()}  # fmt: skip
        return {"requests": log, "world": w.counts(), "list_order": w.list_order}

    def capacity(b: Body) -> None:
        w.set_gpu_capacity(str(b["gpu_type"]), None if b.get("n") is None else int(b["n"]))

    def prices(b: Body) -> None:
        w.set_price(str(b["base_model"]), float(b["price_per_gpu_hour"]))

    add = router.add
    add("GET", "/_sim/health", guarded(lambda req, b: {"status": "ok", "now": fmt_ts(w.clock.now_us())}))  # fmt: skip
    add("GET", "/_sim/stats", guarded(stats))
    add("GET", "/_sim/billing", call(lambda b: w.billing()))
    add("POST", "/_sim/clock/advance", call(lambda b: w.advance_clock(float(b["seconds"]))))
    add("POST", "/_sim/list-order", call(lambda b: w.set_list_order(b["order"])))
    add("POST", "/_sim/populate", guarded(lambda req, b: w.populate(**_pick(b, *_POPULATE_FIELDS))))
    add("POST", "/_sim/capacity", call(capacity))
    add("POST", "/_sim/prices", call(prices))
    add("POST", "/_sim/requests/reset", call(lambda b: requests.reset()))
    add("POST", "/_sim/faults", guarded(add_fault))
    add("DELETE", "/_sim/faults", call(lambda b: faults.clear()))
    add("POST", "/_sim/sessions", create("session", lambda req, b: w.create_session(
        b.get("resource_id"), **_pick(b, *_SESSION_FIELDS))))  # fmt: skip
    add("POST", "/_sim/resources", create("resource", lambda req, b: w.create_model_resource(
        **_pick(b, *_RESOURCE_FIELDS))))  # fmt: skip
    add("POST", "/_sim/sessions/{id}/checkpoints", create("checkpoint", add_checkpoint))
    session_calls: dict[str, Call] = {
        "steps": lambda i, b: w.advance_steps(i, int(b.get("n", 1))),
        "start": lambda i, b: w.start_session(i),
        "stop": lambda i, b: w.stop_session(i, immediate=bool(b.get("immediate"))),
        "fail": lambda i, b: w.fail_session(i, **_pick(b, "code", "message")),
        "status": lambda i, b: w.set_status(i, str(b["status"])),
    }
    resource_calls: dict[str, Call] = {
        "expire": lambda i, b: w.expire_resource(i),
        "stop": lambda i, b: w.stop_model_resource(i, force=bool(b.get("force"))),
        "fail": lambda i, b: w.fail_model_resource(i, **_pick(b, "code", "message")),
        "extend-expiry": lambda i, b: w.extend_expiry(i, float(b["seconds"])),
        "status": lambda i, b: w.set_status(i, str(b["status"])),
        "protect": lambda i, b: w.protect_resource(i, bool(b.get("protected", True))),
    }
    checkpoint_calls: dict[str, Call] = {"register": lambda i, b: w.register_checkpoint(i)}
    routes = {"session": session_calls, "resource": resource_calls, "checkpoint": checkpoint_calls}
    for kind, calls in routes.items():
        for action, fn in calls.items():
            add("POST", f"/_sim/{kind}s/{{id}}/{action}", on(kind, fn))
