"""Typed errors of the RL API client, built so they are safe to log and to show in Dagster.

Why this module is careful:

* Dagster serialises an exception *and its chained causes* into the event log. An ``httpx``
  exception carries the ``httpx.Request`` and with it the ``Authorization`` header, so transport
  errors are rebuilt here and raised without a chain (see ``dagster-anchors.md`` §B2).
* The API key must never appear in ``str``/``repr``/``args``. Every text that came from the
  outside (error bodies, URLs) goes through :func:`scrub` before it is stored, because a proxy or
  a buggy server may echo the request headers back.

How a response or a transport failure becomes one of these errors is in ``error_mapping.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_REDACTED = "***"
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]+")


#: Shorter "secrets" are not masked: a real key is longer, and masking a one-letter test key
#: would garble every message ("Name or service not known" → "Name or service not ***nown").
MIN_SECRET_CHARS = 8


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask every secret (and any ``Bearer <token>``) in ``text``.

    A secret is masked where it stands as a whole token: not preceded or followed by a letter
    or digit (``key=SECRET&``, ``t-SECRET`` are masked; ``xSECRETx`` is another token).
    """
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS and secret in text:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", _REDACTED, text)
    return _BEARER.sub(r"\1 " + _REDACTED, text)


class TogetherRLError(Exception):
    """Base of every error the client raises.

    ``retryable`` says whether the *failure kind* is transient (408, 429, 5xx, transport, decode);
    whether the client actually retried also depends on the request being idempotent.
    ``url`` is the path and query only: never the host's credentials, never headers.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
        api_message: str | None = None,
        request_id: str | None = None,
        method: str | None = None,
        url: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        body_excerpt: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.error_type = error_type
        self.error_code = error_code
        self.api_message = api_message
        self.request_id = request_id
        self.method = method
        self.url = url
        self.retryable = retryable
        #: Seconds the server asked us to wait (``Retry-After``/``retry-after-ms``), if any.
        self.retry_after = retry_after
        self.body_excerpt = body_excerpt
        #: HTTP attempts made for the call that raised this (set by the retry layer).
        self.attempts = 1

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructors do not survive the default pickling; keep errors picklable
        # for executors that ship exceptions between processes.
        return (_rebuild, (type(self), self.message, self.__dict__))


def _rebuild(cls: type[TogetherRLError], message: str, state: dict[str, Any]) -> TogetherRLError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class ConfigurationError(TogetherRLError):
    """The client cannot be built: missing API key, bad or insecure base URL."""


class UnreachableHostError(ConfigurationError):
    """The base URL's host name does not exist (DNS says so): a typo, not an outage.

    Not retried. ``host`` and ``base_url`` name what was tried. A resolver that is
    temporarily down (``EAI_AGAIN``) is a :class:`TransportError` instead, and retried.
    """

    def __init__(self, message: str, *, host: str, base_url: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.host = host
        self.base_url = base_url


class TLSCertificateError(ConfigurationError):
    """The server's TLS certificate does not verify (wrong host, self-signed, intercepted).

    Not retried: the same certificate will fail the same way.
    """

    def __init__(self, message: str, *, host: str, base_url: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.host = host
        self.base_url = base_url


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
    """HTTP 429: rate limited, or a model resource's concurrent-session cap is reached.

    ``retry_after`` holds the server's requested wait in seconds, when it sent one.
    """


class ServerError(TogetherRLError):
    """HTTP 5xx."""


class APIStatusError(TogetherRLError):
    """Any other non-2xx status (e.g. 408, 3xx redirects, 418)."""


class TransportError(TogetherRLError):
    """The HTTP exchange itself failed: connect, read, write, timeout or protocol error.

    ``may_have_reached_server`` is False only when the request surely never left the client
    (connection refused, connect or pool timeout); only then may a non-idempotent request be
    sent again without risking a duplicate.
    """

    def __init__(self, message: str, *, may_have_reached_server: bool, **kwargs: Any) -> None:
        super().__init__(message, retryable=True, **kwargs)
        self.may_have_reached_server = may_have_reached_server


class DecodeError(TogetherRLError):
    """A 2xx response whose body is not valid JSON or does not have the expected shape."""


class DeadlineExceeded(TogetherRLError):
    """The call's time budget ran out before it could succeed.

    ``last_error`` is the failure of the last attempt (None if no attempt could start). Always
    ``retryable``: only transient failures are retried into a deadline, so a later call (e.g.
    the next sensor tick) may well succeed.
    """

    def __init__(self, message: str, *, last_error: TogetherRLError | None = None, **kw: Any):
        super().__init__(message, retryable=True, **kw)
        self.last_error = last_error
