"""The one exception the simulator raises, carrying the HTTP error it maps to.

World methods raise it for invalid control calls too (unknown id → 404, full resource → 429),
so the HTTP layer can forward the same error without translating it.
"""

from __future__ import annotations

import json

#: Error ``type`` per HTTP status, following the OpenAI-style ``ErrorData`` body.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def error_type_for(status: int) -> str:
    """``ErrorData.type`` for an HTTP status (5xx → ``server_error``)."""
    return ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_body(
    status: int,
    message: str,
    *,
    type: str | None = None,
    param: str | None = None,
    code: str | None = None,
) -> bytes:
    """Serialize ``{"error": {message, type, param, code}}``."""
    err = {"message": message, "type": type or error_type_for(status), "param": param, "code": code}
    return json.dumps({"error": err}, separators=(",", ":")).encode()


class SimulatorError(Exception):
    """An API error: HTTP ``status`` plus the fields of the ``ErrorData`` body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or error_type_for(status)

    def body(self) -> bytes:
        """The JSON error body the server sends for this error."""
        return error_body(
            self.status, self.message, type=self.type, param=self.param, code=self.code
        )

    def __repr__(self) -> str:
        return f"SimulatorError({self.status}, {self.message!r}, param={self.param!r})"


def not_found(kind: str, ident: str, param: str | None = None) -> SimulatorError:
    """404 for an unknown id."""
    return SimulatorError(404, f"{kind} {ident!r} not found", param=param, code="not_found")


def bad_request(message: str, param: str | None = None, code: str | None = None) -> SimulatorError:
    """400 ``invalid_request_error``."""
    return SimulatorError(400, message, param=param, code=code or "invalid_request")
