"""``/_sim/*``: an unauthenticated JSON control API, so another process can drive the world.

Meant for a simulator started by the CLI (e.g. behind ``dagster dev``): bind it to 127.0.0.1
only. Every endpoint maps onto one :class:`SimulatedWorld` / fault / log method:

=======  =====================================  ===================================================
GET      /_sim/health                           ``{"status": "ok", "now": ts}``
GET      /_sim/stats                            request counters, fault counters, world counts
POST     /_sim/clock/advance                    ``{seconds}``
POST     /_sim/list-order                       ``{order: "newest_first" | "oldest_first" | "unordered"}``
POST     /_sim/populate                         ``{n_sessions, checkpoints_per_session, active,
                                                seed, days}``
POST     /_sim/resources                        ``{base_model, lora, inactive_timeout, status}``
POST     /_sim/resources/{id}/expire            stop for inactivity now (sessions EXPIRED)
POST     /_sim/sessions                         ``{resource_id?, display_name, wandb, created_by,
                                                registration_shape, int64_as_string, status,
                                                fail_at_creation, base_model, lora}``
POST     /_sim/sessions/{id}/steps              ``{n}``
POST     /_sim/sessions/{id}/checkpoints        ``{type: "inference"|"training", step, registered,
                                                registration_shape}``
POST     /_sim/sessions/{id}/start|stop|fail    stop: ``{immediate}``; fail: ``{code, message}``
POST     /_sim/sessions/{id}/status             ``{status}`` (any raw string)
POST     /_sim/checkpoints/{id}/register        register a lagging checkpoint
POST     /_sim/faults                           FaultRule fields (``pattern`` + action)
DELETE   /_sim/faults                           clear all rules
POST     /_sim/requests/reset                   clear the request log
(more)   /_sim/resources/{id}/stop|fail|...     see ``control_resources.py``
=======  =====================================  ===================================================

Creating calls answer with the wire JSON of what they created; calls on one object answer
``{"ok": true, "result": <return value>, "session" | "checkpoint" | "resource": <its wire JSON
after the change>}``.
"""

from __future__ import annotations

import json
from typing import Any

from .checkpoints import DEFAULT
from .control_resources import register_resource_controls
from .errors import bad_request
from .faults import FaultPlan
from .requestlog import RequestLog
from .routing import Handler, Request, Response, Router, json_response
from .wire import fmt_ts
from .world import SimulatedWorld

_FAULT_FIELDS = frozenset(
    {
        "status", "times", "nth", "rate", "delay_s", "drop", "reset_after_headers", "malformed",
        "retry_after", "retry_after_ms", "message", "headers", "process",
    }
)  # fmt: skip


def _pick(body: dict[str, Any], *names: str) -> dict[str, Any]:
    return {n: body[n] for n in names if n in body}


class ControlEndpoints:
    """Handlers for ``/_sim/*``."""

    def __init__(self, world: SimulatedWorld, faults: FaultPlan, requests: RequestLog) -> None:
        self.world = world
        self.faults = faults
        self.requests = requests

    def register(self, router: Router) -> None:
        w = self.world
        add = router.add
        add("GET", "/_sim/health", self.health)
        add("GET", "/_sim/stats", self.stats)
        add(
            "POST",
            "/_sim/clock/advance",
            self._call(lambda b: w.advance_clock(float(b["seconds"]))),
        )
        add("POST", "/_sim/list-order", self._call(lambda b: w.set_list_order(b["order"])))
        add("POST", "/_sim/populate", self.populate)
        add("POST", "/_sim/resources", self.create_resource)
        add(
            "POST",
            "/_sim/resources/{id}/expire",
            self._on_id(lambda i, b: w.expire_resource(i), "resource"),
        )
        add("POST", "/_sim/sessions", self.create_session)
        add(
            "POST",
            "/_sim/sessions/{id}/steps",
            self._on_id(lambda i, b: w.advance_steps(i, int(b.get("n", 1))), "session"),
        )
        add("POST", "/_sim/sessions/{id}/checkpoints", self.add_checkpoint)
        add(
            "POST",
            "/_sim/sessions/{id}/start",
            self._on_id(lambda i, b: w.start_session(i), "session"),
        )
        add(
            "POST",
            "/_sim/sessions/{id}/stop",
            self._on_id(
                lambda i, b: w.stop_session(i, immediate=bool(b.get("immediate"))), "session"
            ),
        )
        add(
            "POST",
            "/_sim/sessions/{id}/fail",
            self._on_id(lambda i, b: w.fail_session(i, **_pick(b, "code", "message")), "session"),
        )
        add(
            "POST",
            "/_sim/sessions/{id}/status",
            self._on_id(lambda i, b: w.set_status(i, str(b["status"])), "session"),
        )
        add(
            "POST",
            "/_sim/checkpoints/{id}/register",
            self._on_id(lambda i, b: w.register_checkpoint(i), "checkpoint"),
        )
        add("POST", "/_sim/faults", self.add_fault)
        add("DELETE", "/_sim/faults", self._call(lambda b: self.faults.clear()))
        add("POST", "/_sim/requests/reset", self._call(lambda b: self.requests.reset()))
        register_resource_controls(router, w)

    # --- generic adapters ------------------------------------------------------------------
    @staticmethod
    def _call(fn: Any) -> Handler:
        def handler(req: Request) -> Response:
            try:
                fn(req.json())
            except (KeyError, TypeError, ValueError) as exc:
                raise bad_request(f"invalid control request: {exc!r}") from None
            return json_response({"ok": True})

        return handler

    def _on_id(self, fn: Any, kind: str) -> Handler:
        """Apply ``fn`` to the object named in the path; answer with the object as changed."""
        show = {
            "session": self.world.session_json,
            "checkpoint": self.world.checkpoint_json,
            "resource": self.world.resource_json,
        }[kind]

        def handler(req: Request) -> Response:
            try:
                result = fn(req.ids[0], req.json())
            except (KeyError, TypeError, ValueError) as exc:
                raise bad_request(f"invalid control request: {exc!r}") from None
            changed = json.loads(show(req.ids[0]))
            return json_response({"ok": True, "result": result, kind: changed})

        return handler

    # --- endpoints -------------------------------------------------------------------------
    def health(self, req: Request) -> Response:
        return json_response({"status": "ok", "now": fmt_ts(self.world.clock.now_us())})

    def stats(self, req: Request) -> Response:
        return json_response(
            {
                "requests": {
                    "total": len(self.requests),
                    "by_route": self.requests.counts(),
                    "faults": self.requests.fault_counts(),
                },
                "world": self.world.counts(),
                "list_order": self.world.list_order,
            }
        )

    def populate(self, req: Request) -> Response:
        body = req.json()
        kwargs = _pick(body, "n_sessions", "checkpoints_per_session", "active", "seed", "days")
        try:
            return json_response(self.world.populate(**kwargs))
        except (TypeError, ValueError) as exc:
            raise bad_request(f"invalid populate request: {exc!r}") from None

    def create_resource(self, req: Request) -> Response:
        body = req.json()
        kwargs = _pick(
            body, "base_model", "lora", "inactive_timeout", "status", "created_by", "gpu_type"
        )
        w = self.world
        with w.transaction():
            try:
                rid = w.create_model_resource(**kwargs)
            except TypeError as exc:
                raise bad_request(f"invalid resource request: {exc!r}") from None
            return json_response(w.resource_json(rid))

    def create_session(self, req: Request) -> Response:
        body = req.json()
        kwargs = _pick(
            body, "display_name", "wandb", "created_by", "registration_shape", "int64_as_string",
            "status", "fail_at_creation", "base_model", "lora", "lora_config",
        )  # fmt: skip
        w = self.world
        with w.transaction():
            try:
                sid = w.create_session(body.get("resource_id"), **kwargs)
            except (TypeError, ValueError) as exc:
                raise bad_request(f"invalid session request: {exc!r}") from None
            return json_response(w.session_json(sid))

    def add_checkpoint(self, req: Request) -> Response:
        body = req.json()
        sid = req.ids[0]
        w = self.world
        with w.transaction():
            try:
                if body.get("type", "inference") == "training":
                    cid = w.add_training_checkpoint(sid, **_pick(body, "step", "registered"))
                else:
                    shape = body.get("registration_shape", DEFAULT)
                    cid = w.add_inference_checkpoint(
                        sid, registration_shape=shape, **_pick(body, "step", "registered")
                    )
            except (TypeError, ValueError) as exc:
                raise bad_request(f"invalid checkpoint request: {exc!r}") from None
            return json_response(w.checkpoint_json(cid))

    def add_fault(self, req: Request) -> Response:
        body = req.json(required=True)
        unknown = set(body) - _FAULT_FIELDS - {"pattern"}
        if "pattern" not in body or unknown:
            raise bad_request(
                f"a fault needs 'pattern' and known fields (unknown: {sorted(unknown)})"
            )
        try:
            rule = self.faults.add(str(body["pattern"]), **_pick(body, *_FAULT_FIELDS))
        except (TypeError, ValueError) as exc:
            raise bad_request(f"invalid fault: {exc}") from None
        return json_response({"ok": True, "fault": rule.label()})
