"""Requests, responses and the router every endpoint module registers on."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from .wire import bad_request

#: Path segments that look like ids: an unmatched path is still counted under a template.
_ID = re.compile(r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                 r"|(?:ml|rv|req|op|chatcmpl)[_-][0-9a-zA-Z]+|[0-9a-f]{16,})$")  # fmt: skip


@dataclass
class Request:
    method: str
    path: str
    ids: tuple[str, ...]
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    base_url: str
    request_id: str

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def args(self, name: str) -> list[str]:
        """All values, comma-joined ones split (SDK array style)."""
        values = (v.strip() for value in self.query.get(name, ()) for v in value.split(","))
        return [v for v in values if v]

    def json(self, *, required: bool = False) -> dict[str, Any]:
        """The body as a JSON object ({} when empty and not required), else a 400."""
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
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def json_response(body: bytes | dict[str, Any] | list[Any], status: int = 200) -> Response:
    if not isinstance(body, bytes):
        body = json.dumps(body, separators=(",", ":")).encode()
    return Response(status, body)


Handler = Callable[[Request], Response]
#: ``(handler or None, template, ids, methods allowed on that template)``
Match = tuple[Handler | None, str, tuple[str, ...], list[str]]


class Router:
    """``METHOD /template/{id}`` → handler; log counters and fault rules use the template, so ids
    never fragment them. Literal segments win over ``{id}`` (``estimate-cost`` is no id)."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, str, tuple[str, ...], Handler]] = []

    def add(self, method: str, template: str, handler: Handler) -> None:
        segments = tuple(template.strip("/").split("/"))
        self.routes.append((method, template, segments, handler))
        self.routes.sort(key=lambda r: -sum(s != "{id}" for s in r[2]))

    def match(self, method: str, path: str) -> Match:
        parts = tuple(path.strip("/").split("/"))
        found, allowed, best = None, [], None
        ids_found: tuple[str, ...] = ()
        for m, template, segments, handler in self.routes:
            if len(segments) != len(parts) or (best is not None and template != best):
                continue
            ids = tuple(p for s, p in zip(segments, parts, strict=True) if s == "{id}")
            if all(s == p or (s == "{id}" and p) for s, p in zip(segments, parts, strict=True)):
                best = template
                allowed.append(m)
                if m == method and found is None:
                    found, ids_found = handler, ids
        if best is not None:
            return found, best, ids_found, allowed
        return None, "/" + "/".join("{id}" if _ID.match(p) else p for p in parts), (), []
