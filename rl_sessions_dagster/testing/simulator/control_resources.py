"""``/_sim/*`` routes for model resources (kept apart from ``control.py`` for size):

=======  =====================================  ===================================================
POST     /_sim/resources/{id}/stop              ``{force}`` (as the API's stop, errors included)
POST     /_sim/resources/{id}/fail              ``{code, message}``
POST     /_sim/resources/{id}/extend-expiry     ``{seconds}``
POST     /_sim/resources/{id}/status            ``{status}`` (any raw string)
POST     /_sim/resources/{id}/protect           ``{protected}``: stop answers 403 while true
POST     /_sim/capacity                         ``{gpu_type, n}`` (n null: unlimited)
POST     /_sim/prices                           ``{base_model, price_per_gpu_hour}``
GET      /_sim/billing                          per resource: ready_at, unready_at,
                                                billed_seconds, billing, price_per_hour
=======  =====================================  ===================================================
"""

from __future__ import annotations

from typing import Any

from .errors import bad_request
from .routing import Handler, Request, Response, Router, json_response
from .world import SimulatedWorld


def _guard(fn: Any) -> Handler:
    def handler(req: Request) -> Response:
        try:
            result = fn(req)
        except (KeyError, TypeError, ValueError) as exc:
            raise bad_request(f"invalid control request: {exc!r}") from None
        return json_response({"ok": True, "result": result})

    return handler


def register_resource_controls(router: Router, world: SimulatedWorld) -> None:
    w = world
    add = router.add

    def body(req: Request) -> dict[str, Any]:
        return req.json()

    add("POST", "/_sim/resources/{id}/stop", _guard(
        lambda r: w.stop_model_resource(r.ids[0], force=bool(body(r).get("force")))
    ))  # fmt: skip
    add("POST", "/_sim/resources/{id}/fail", _guard(
        lambda r: w.fail_model_resource(
            r.ids[0], **{k: v for k, v in body(r).items() if k in ("code", "message")}
        )
    ))  # fmt: skip
    add("POST", "/_sim/resources/{id}/extend-expiry", _guard(
        lambda r: w.extend_expiry(r.ids[0], float(body(r)["seconds"]))
    ))  # fmt: skip
    add("POST", "/_sim/resources/{id}/status", _guard(
        lambda r: w.set_status(r.ids[0], str(body(r)["status"]))
    ))  # fmt: skip
    add("POST", "/_sim/resources/{id}/protect", _guard(
        lambda r: w.protect_resource(r.ids[0], bool(body(r).get("protected", True)))
    ))  # fmt: skip
    add("POST", "/_sim/capacity", _guard(
        lambda r: w.set_gpu_capacity(
            str(body(r)["gpu_type"]), None if body(r).get("n") is None else int(body(r)["n"])
        )
    ))  # fmt: skip
    add("POST", "/_sim/prices", _guard(
        lambda r: w.set_price(str(body(r)["base_model"]), float(body(r)["price_per_gpu_hour"]))
    ))  # fmt: skip
    add("GET", "/_sim/billing", _guard(lambda r: w.billing()))
