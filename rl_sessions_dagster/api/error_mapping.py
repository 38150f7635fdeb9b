"""From an HTTP failure to a typed error: status → class, error bodies, transport failures.

* Error bodies have two plausible shapes: Together's declared ``{"error": {message, type, param,
  code}}`` and a gRPC-gateway ``{"code", "message", "details"}``. Both are read; anything else
  becomes a capped body excerpt (proxy HTML pages can be huge).
* Everything that came from the outside goes through :func:`~.errors.scrub` before it is
  stored in an error, and ``httpx`` exceptions are rebuilt, never chained (see ``errors.py``).
* A wrong host or certificate is a :class:`~.errors.ConfigurationError` (raised at once); any
  other transport failure is a retryable :class:`~.errors.TransportError`.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpx

from .errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TLSCertificateError,
    TogetherRLError,
    TransportError,
    UnprocessableEntityError,
    UnreachableHostError,
    scrub,
)

#: Longest excerpt of a response body kept in an error message.
BODY_EXCERPT_CHARS = 400
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-together-request-id")
_GRPC_CODES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
)  # fmt: skip


_STATUS_CLASSES: dict[int, type[TogetherRLError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _is_retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def error_class_for_status(status: int) -> type[TogetherRLError]:
    """The error class the client raises for an HTTP status."""
    if status >= 500:
        return ServerError
    return _STATUS_CLASSES.get(status, APIStatusError)


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def parse_error_body(content: bytes) -> tuple[str | None, str | None, str | None]:
    """Read ``(type, code, message)`` from a Together or gRPC-gateway error body.

    Returns ``(None, None, None)`` when the body is neither (HTML, plain text, empty).
    """
    try:
        body = json.loads(content)
    except ValueError:
        return None, None, None
    if not isinstance(body, dict):
        return None, None, None
    inner = body.get("error")
    if isinstance(inner, dict):
        return _text(inner.get("type")), _text(inner.get("code")), _text(inner.get("message"))
    if isinstance(inner, str):
        return None, _text(body.get("code")), inner
    code = body.get("code")
    error_type = None
    if isinstance(code, int) and 0 <= code < len(_GRPC_CODES):
        error_type = _GRPC_CODES[code]
    elif isinstance(code, str) and code.upper() in _GRPC_CODES:
        error_type = code.upper()
    return error_type, _text(code), _text(body.get("message"))


def _cap(text: str) -> str:
    """Proxy pages and verbose servers can send kilobytes; messages end up in every tick row."""
    if len(text) > BODY_EXCERPT_CHARS:
        return text[:BODY_EXCERPT_CHARS] + f"… [{len(text)} chars]"
    return text


def _excerpt(content: bytes) -> str | None:
    text = content.decode("utf-8", errors="replace").strip()
    return _cap(text) if text else None


def path_and_query(url: httpx.URL) -> str:
    """The part of a URL that is safe to show: path and query, no host or credentials."""
    return url.raw_path.decode("ascii", errors="replace")


def request_id_of(headers: httpx.Headers) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        if value := headers.get(name):
            return value
    return None


def error_from_response(
    response: httpx.Response,
    *,
    secrets: Iterable[str | None],
    retry_after: float | None = None,
) -> TogetherRLError:
    """Build the typed, scrubbed error for a non-2xx response.

    Message shape: ``GET /v1/rl/… → 401 authentication_error (code=invalid_api_key): Invalid
    API key [request_id=req_x]``; without a parseable body, a capped excerpt of it.
    """
    secrets = tuple(secrets)
    request = response.request
    method, path = request.method, request.url.path
    status = response.status_code
    error_type, error_code, api_message = (
        _cap(scrub(v, secrets)) if v else None for v in parse_error_body(response.content)
    )
    excerpt = _excerpt(response.content)
    excerpt = scrub(excerpt, secrets) if excerpt else None
    request_id = request_id_of(response.headers)

    head = f"{method} {path} → {status}"
    if error_type:
        head += f" {error_type}"
    if error_code and error_code != error_type:
        head += f" (code={error_code})"
    detail = api_message or excerpt or response.reason_phrase or "no response body"
    message = f"{head}: {detail}"
    if request_id:
        message += f" [request_id={request_id}]"
    cls = error_class_for_status(status)
    return cls(
        scrub(message, secrets),
        status_code=status,
        error_type=error_type,
        error_code=error_code,
        api_message=api_message,
        request_id=scrub(request_id, secrets) if request_id else None,
        method=method,
        url=scrub(path_and_query(request.url), secrets),
        retryable=_is_retryable_status(status),
        retry_after=retry_after,
        body_excerpt=excerpt,
    )


def transport_error(
    exc: httpx.RequestError, *, method: str, url: httpx.URL, secrets: Iterable[str | None]
) -> TransportError:
    """Rebuild an ``httpx`` failure as a :class:`TransportError` that holds no httpx objects.

    The caller must raise the result *outside* its ``except`` block (or ``from None``), so the
    original exception, whose request carries the auth header, is not chained.
    """

    # Transport failures after which the request surely never reached the server.
    not_sent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    secrets = tuple(secrets)
    reason = scrub(str(exc) or "no detail", secrets)
    return TransportError(
        f"{method} {url.path}: {type(exc).__name__}: {reason}",
        may_have_reached_server=not isinstance(exc, not_sent),
        method=method,
        url=scrub(path_and_query(url), secrets),
    )


#: getaddrinfo answers meaning "this name has no address": a typo or a wrong base URL.
#: ``EAI_AGAIN`` (resolver temporarily unreachable) and ``EAI_FAIL`` are not here: transient.
_NO_SUCH_HOST = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)
_NO_SUCH_HOST_TEXT = (
    "name or service not known",
    "nodename nor servname provided",
    "no address associated with hostname",
)


def _causes(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def configuration_failure(
    exc: httpx.RequestError,
    *,
    method: str,
    url: httpx.URL,
    base_url: str,
    secrets: Iterable[str | None],
) -> ConfigurationError | None:
    """A :class:`UnreachableHostError` or :class:`TLSCertificateError` when ``exc`` is one of
    those (retrying cannot help); None for a transient failure.

    Like :func:`transport_error`, the result holds no httpx object: raise it outside the
    ``except`` block.
    """

    if not isinstance(exc, httpx.ConnectError):
        return None
    secrets = tuple(secrets)
    host = url.host
    where = (
        f"host {host!r} (base_url {base_url!r}; set by the base_url argument or the "
        "TOGETHER_BASE_URL environment variable)"
    )
    common = {"host": host, "base_url": base_url, "method": method,
              "url": scrub(path_and_query(url), secrets)}  # fmt: skip
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = scrub(cause.verify_message or str(cause), secrets)
            return TLSCertificateError(
                f"TLS certificate verification failed for {where}: {detail}. Check the base URL; "
                "not retried",
                **common,
            )
        if isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_HOST:
            break
    else:
        if not any(t in str(exc).lower() for t in _NO_SUCH_HOST_TEXT):
            return None
    return UnreachableHostError(
        f"cannot resolve {where}: no such host. Check the base URL for a typo; not retried",
        **common,
    )
