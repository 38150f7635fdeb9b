"""Typed errors of the RL API client, safe to log: Dagster shows chained causes and an ``httpx``
error holds the ``Authorization`` header, so those are rebuilt, never chained; text is scrubbed."""

from __future__ import annotations

import copyreg
import json
import re
import socket
import ssl
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import httpx

_REDACTED = "***"
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]+")
#: Shorter "secrets" are not masked: a real key is longer; a one-letter test key garbles text.
MIN_SECRET_CHARS = 8
#: Longest excerpt of a response body kept in an error message (proxy pages can be huge).
BODY_EXCERPT_CHARS = 400
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-together-request-id")
#: gRPC status names, in code order (a gRPC-gateway error body may send either).
_GRPC_NAMES = (
    "OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS "
    "PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE UNIMPLEMENTED "
    "INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED"
)
_GRPC_CODES = tuple(_GRPC_NAMES.split())


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask each secret standing as a whole token (not beside a letter/digit), and any Bearer."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS and secret in text:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", _REDACTED, text)
    return _BEARER.sub(r"\1 " + _REDACTED, text)


@dataclass(eq=False, repr=False)
class TogetherRLError(Exception):
    """Base of every error the client raises. ``retryable``: the *failure kind* is transient
    (whether it was retried also depends on idempotency); ``url`` is the path and query only."""

    message: str
    _: KW_ONLY
    status_code: int | None = None
    error_type: str | None = None
    error_code: str | None = None
    api_message: str | None = None
    request_id: str | None = None
    method: str | None = None
    url: str | None = None
    retryable: bool = False
    retry_after: float | None = None  # seconds the server asked us to wait
    body_excerpt: str | None = None
    #: HTTP attempts made for the call that raised this (set by the retry layer).
    attempts: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Executors ship exceptions between processes; ``cls(*args)`` fails on keyword-only ones.
        return (copyreg.__newobj__, (type(self), self.message), self.__dict__)  # type: ignore[attr-defined]


class ConfigurationError(TogetherRLError):
    """The client cannot be built: missing API key, bad or insecure base URL."""


class _HostError(ConfigurationError):
    """A configuration error about the base URL's host: ``host`` and ``base_url`` say which."""

    def __init__(self, message: str, *, host: str, base_url: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.host = host
        self.base_url = base_url


class UnreachableHostError(_HostError):
    """The base URL's host name does not exist (DNS says so): a typo, not an outage."""


class TLSCertificateError(_HostError):
    """The server's TLS certificate does not verify; retrying would fail the same way."""


class BadRequestError(TogetherRLError):
    """HTTP 400: the request is invalid (also: stopping an already stopped model resource)."""


class UnprocessableEntityError(BadRequestError):
    """HTTP 422: the body was well-formed but semantically invalid."""


class AuthenticationError(TogetherRLError):
    """HTTP 401: missing or invalid API key."""


class PermissionDeniedError(TogetherRLError):
    """HTTP 403: the key is valid but may not do this."""


class NotFoundError(TogetherRLError):
    """HTTP 404: no such session, resource, checkpoint or operation."""


class ConflictError(TogetherRLError):
    """HTTP 409: the object's state forbids this (never retried, unlike the SDK)."""


class RateLimitError(TogetherRLError):
    """HTTP 429: rate limited, or a model resource's concurrent-session cap is reached."""


class ServerError(TogetherRLError):
    """HTTP 5xx."""


class APIStatusError(TogetherRLError):
    """Any other non-2xx status (e.g. 408, 3xx redirects, 418)."""


class TransportError(TogetherRLError):
    """The HTTP exchange failed. ``may_have_reached_server`` is False only when the request
    surely never left: only then may a non-idempotent one be sent again."""

    def __init__(self, message: str, *, may_have_reached_server: bool, **kwargs: Any) -> None:
        super().__init__(message, retryable=True, **kwargs)
        self.may_have_reached_server = may_have_reached_server


class DecodeError(TogetherRLError):
    """A 2xx response whose body is not valid JSON or does not have the expected shape."""


class DeadlineExceeded(TogetherRLError):
    """The call's time budget ran out (after ``last_error``, if any); retryable, like its causes."""

    def __init__(self, message: str, *, last_error: TogetherRLError | None = None, **kw: Any):
        super().__init__(message, retryable=True, **kw)
        self.last_error = last_error


#: Failures a later read may not meet: a tick or a sync run ends early, keeping what it read.
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)


_STATUS_CLASSES: dict[int, type[TogetherRLError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def parse_error_body(content: bytes) -> tuple[str | None, str | None, str | None]:
    """``(type, code, message)`` of a Together ``{"error": {message, type, code}}`` or a
    gRPC-gateway ``{"code", "message"}`` body; ``(None, None, None)`` for anything else."""
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
    name = str(code).upper()
    if isinstance(code, int) and 0 <= code < len(_GRPC_CODES):
        name = _GRPC_CODES[code]
    return name if name in _GRPC_CODES else None, _text(code), _text(body.get("message"))


def _cap(text: str) -> str:
    if len(text) > BODY_EXCERPT_CHARS:
        return text[:BODY_EXCERPT_CHARS] + f"… [{len(text)} chars]"
    return text


def path_and_query(url: httpx.URL) -> str:
    """The part of a URL that is safe to show: path and query, no host or credentials."""
    return url.raw_path.decode("ascii", errors="replace")


def error_from_response(
    response: httpx.Response, *, secrets: Iterable[str | None], retry_after: float | None = None
) -> TogetherRLError:
    """The typed, scrubbed error for a non-2xx response, e.g. ``GET /v1/rl/… → 401
    authentication_error (code=invalid_api_key): Invalid API key [request_id=req_x]``."""
    secrets = tuple(secrets)
    request = response.request
    status = response.status_code
    error_type, error_code, api_message = (
        _cap(scrub(v, secrets)) if v else None for v in parse_error_body(response.content)
    )
    text = response.content.decode("utf-8", errors="replace").strip()
    excerpt = scrub(_cap(text), secrets) if text else None
    request_id = next((v for h in _REQUEST_ID_HEADERS if (v := response.headers.get(h))), None)
    head = f"{request.method} {request.url.path} → {status}"
    if error_type:
        head += f" {error_type}"
    if error_code and error_code != error_type:
        head += f" (code={error_code})"
    message = f"{head}: {api_message or excerpt or response.reason_phrase or 'no response body'}"
    if request_id:
        message += f" [request_id={request_id}]"
    cls = ServerError if status >= 500 else _STATUS_CLASSES.get(status, APIStatusError)
    return cls(
        scrub(message, secrets),
        status_code=status,
        error_type=error_type,
        error_code=error_code,
        api_message=api_message,
        request_id=scrub(request_id, secrets) if request_id else None,
        method=request.method,
        url=scrub(path_and_query(request.url), secrets),
        retryable=status in (408, 429) or status >= 500,
        retry_after=retry_after,
        body_excerpt=excerpt,
    )


def transport_error(
    exc: httpx.RequestError, *, method: str, url: httpx.URL, secrets: Iterable[str | None]
) -> TransportError:
    """An ``httpx`` failure as a :class:`TransportError` holding no httpx objects; raise it
    outside the ``except`` block, so the original (whose request has the key) is not chained."""
    not_sent = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    secrets = tuple(secrets)
    return TransportError(
        f"{method} {url.path}: {type(exc).__name__}: {scrub(str(exc) or 'no detail', secrets)}",
        may_have_reached_server=not isinstance(exc, not_sent),
        method=method,
        url=scrub(path_and_query(url), secrets),
    )


#: getaddrinfo answers meaning "this name has no address" (``EAI_AGAIN`` is transient).
_NO_SUCH_HOST = frozenset({getattr(socket, n, None) for n in ("EAI_NONAME", "EAI_NODATA")} - {None})
_NO_SUCH_HOST_TEXT = (
    "name or service not known",
    "nodename nor servname provided",
    "no address associated with hostname",
)


def configuration_failure(
    exc: httpx.RequestError,
    *,
    method: str,
    url: httpx.URL,
    base_url: str,
    secrets: Iterable[str | None],
) -> ConfigurationError | None:
    """An :class:`UnreachableHostError` or :class:`TLSCertificateError`, or None (transient)."""
    if not isinstance(exc, httpx.ConnectError):
        return None
    secrets = tuple(secrets)
    where = (
        f"host {url.host!r} (base_url {base_url!r}; set by the base_url argument or the "
        "TOGETHER_BASE_URL environment variable)"
    )
    safe_url = scrub(path_and_query(url), secrets)
    common = dict(host=url.host, base_url=base_url, method=method, url=safe_url)
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = scrub(cause.verify_message or str(cause), secrets)
            return TLSCertificateError(
                f"TLS certificate verification failed for {where}: {detail}. Check the base URL; "
                "not retried",
                **common,
            )
        if isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_HOST:
            break
        cause = cause.__cause__ or cause.__context__
    else:
        if not any(t in str(exc).lower() for t in _NO_SUCH_HOST_TEXT):
            return None
    return UnreachableHostError(
        f"cannot resolve {where}: no such host. Check the base URL for a typo; not retried",
        **common,
    )
