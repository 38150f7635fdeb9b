"""Request/response values and the path-template router shared by every endpoint module.

Templates name id segments ``{id}`` (``/v1/rl/training-sessions/{id}/stop``); the matched
template is what the request log counts and what fault rules match, so ids never fragment the
counters. Literal segments win over ``{id}`` (``/model-resources/estimate-cost`` is not an id).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from .errors import bad_request

_ID_SEGMENT = re.compile(
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|(?:ml|rv|req|op|chatcmpl)[_-][0-9a-zA-Z]+|[0-9a-f]{16,})$"
)


@dataclass
class Request:
    """One HTTP request as handlers see it (the body is already fully read)."""

    method: str
    path: str
    template: str
    ids: tuple[str, ...]
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    base_url: str
    request_id: str

    def arg(self, name: str) -> str | None:
        """Last value of a query parameter, or None."""
        values = self.query.get(name)
        return values[-1] if values else None

    def args(self, name: str) -> list[str]:
        """All values of a query parameter, splitting comma-joined values (SDK array style)."""
        out: list[str] = []
        for value in self.query.get(name, ()):
            out.extend(v.strip() for v in value.split(",") if v.strip())
        return out

    def json(self, *, required: bool = False) -> dict[str, Any]:
        """The body as a JSON object ({} when empty and not required); 400 otherwise."""
        if not self.body.strip():
            if required:
                raise bad_request("a JSON request body is required")
            return {}
        try:
            payload = json.loads(self.body)
        except ValueError as exc:
            raise bad_request(f"request body is not valid JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise bad_request("request body must be a JSON object")
        return payload


@dataclass
class Response:
    """What a handler returns; the server adds Content-Length, x-request-id and friends."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def json_response(body: bytes | dict[str, Any] | list[Any], status: int = 200) -> Response:
    """A JSON response from bytes (already serialized) or an object."""
    if not isinstance(body, bytes):
        body = json.dumps(body, separators=(",", ":")).encode()
    return Response(status, body)


Handler = Callable[[Request], Response]


@dataclass(frozen=True)
class Route:
    """``method template → handler``."""

    method: str
    template: str
    handler: Handler
    segments: tuple[str, ...]
    literals: int


class Router:
    """Matches ``(method, path)`` to a route; remembers which methods exist for a template."""

    def __init__(self) -> None:
        self._routes: list[Route] = []

    def add(self, method: str, template: str, handler: Handler) -> None:
        segments = tuple(template.strip("/").split("/"))
        literals = sum(1 for s in segments if s != "{id}")
        self._routes.append(Route(method.upper(), template, handler, segments, literals))
        self._routes.sort(key=lambda r: -r.literals)

    @property
    def routes(self) -> list[Route]:
        return list(self._routes)

    def match(self, method: str, path: str) -> tuple[Route | None, str, tuple[str, ...], list[str]]:
        """``(route or None, template, ids, allowed methods)``; unmatched paths get a template
        with id-looking segments replaced by ``{id}`` so they still count sensibly."""
        parts = tuple(path.strip("/").split("/"))
        allowed: list[str] = []
        best: tuple[Route, tuple[str, ...]] | None = None
        best_template = None
        for route in self._routes:
            if len(route.segments) != len(parts):
                continue
            ids = []
            for seg, part in zip(route.segments, parts, strict=True):
                if seg == "{id}":
                    if not part:
                        break
                    ids.append(part)
                elif seg != part:
                    break
            else:
                if best_template is not None and route.template != best_template:
                    continue  # a less literal template for the same path
                best_template = route.template
                allowed.append(route.method)
                if route.method == method and best is None:
                    best = (route, tuple(ids))
        if best is not None:
            return best[0], best[0].template, best[1], allowed
        if best_template is not None:
            return None, best_template, (), allowed
        generic = "/" + "/".join("{id}" if _ID_SEGMENT.match(p) else p for p in parts)
        return None, generic, (), []
