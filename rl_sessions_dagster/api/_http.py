"""The HTTP core under ``RLSessionsClient``: configuration, one call with retries and decoding,
and pagination, so each endpoint method is a few lines of path and body."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import os
import platform
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import pydantic

from ..version import __version__
from .errors import (
    ConfigurationError,
    DeadlineExceeded,
    DecodeError,
    configuration_failure,
    error_from_response,
    path_and_query,
    scrub,
    transport_error,
)
from .pages import Page, SkippedItem, parse_page, salvage
from .retries import RetryPolicy, parse_retry_after

API_KEY_ENV = "TOGETHER_API_KEY"
BASE_URL_ENV = "TOGETHER_BASE_URL"
DEFAULT_BASE_URL = "https://api.together.ai"
MAX_PAGE_SIZE = 100
M = TypeVar("M", bound=pydantic.BaseModel)
T = TypeVar("T")


@dataclass
class ClientStats:
    """``requests`` counts HTTP attempts, retries included; ``skipped_items`` the list items
    that could not be read; ``repaired_items`` the objects read with ``invalid_fields``."""

    calls: int = 0
    requests: int = 0
    skipped_items: int = 0
    repaired_items: int = 0

    @property
    def retries(self) -> int:
        return self.requests - self.calls


def normalise_base_url(raw: str) -> str:
    """A base URL without a trailing ``/`` or ``/v1``. Plain ``http`` is refused except on
    loopback (the key would travel in clear text), credentials, query and fragment always."""
    try:
        url = httpx.URL(raw.strip())
    except httpx.InvalidURL:
        raise ConfigurationError("base URL is not a valid URL") from None
    if url.scheme not in ("http", "https"):
        raise ConfigurationError(f"base URL must use https:// (got scheme {url.scheme!r})")
    if not url.host:
        raise ConfigurationError("base URL has no host")
    if url.userinfo or url.query or url.fragment:
        safe = f"{url.scheme}://{url.host}{url.path}"
        raise ConfigurationError(f"base URL must not carry credentials, query or fragment: {safe}")
    loopback = url.host == "localhost"  # not "*.localhost": glibc would ask DNS for those
    with contextlib.suppress(ValueError):
        loopback = loopback or ipaddress.ip_address(url.host).is_loopback
    if url.scheme == "http" and not loopback:
        raise ConfigurationError(
            f"refusing plain http:// for non-loopback host {url.host!r}: the API key would be "
            "sent unencrypted; use https://"
        )
    path = url.path.rstrip("/").removesuffix("/v1")
    return str(url.copy_with(path=path or "/")).rstrip("/")


def segment(value: str, name: str) -> str:
    """An ID as one URL path segment: non-empty, and percent-encoded so it cannot add a path."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return quote(value, safe="")


def check_page_size(value: int, name: str = "page_size") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PAGE_SIZE:
        raise ValueError(f"{name} must be an int between 1 and {MAX_PAGE_SIZE}, got {value!r}")
    return value


def compact(**fields: Any) -> dict[str, Any]:
    """A JSON body or query without the arguments left at None; models become dicts."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, pydantic.BaseModel):
            value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        if value is not None:
            out[key] = value
    return out


def wait_deadline(client: BaseClient, timeout: float | None, deadline: float | None) -> float:
    """The absolute end of a wait: the earlier of ``timeout`` (from now) and ``deadline``."""
    clock = client.retry.clock
    ends = [d for d in (deadline, None if timeout is None else clock() + timeout) if d is not None]
    if not ends:
        raise ValueError("give a timeout or a deadline: waits are always bounded")
    return min(ends)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One per process: it loads the CA bundle (~25 ms), and a sensor builds a client each tick."""
    return httpx.create_ssl_context()


class BaseClient:
    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
        user_agent_extra: str | None = None,
        on_response: Callable[[httpx.Response], None] | None = None,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise ConfigurationError(f"no API key: pass api_key= or set {API_KEY_ENV}")
        self._secrets = (key,)
        self.base_url = normalise_base_url(
            base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        )
        self._timeout = httpx.Timeout(timeout)
        self.retry = retry or RetryPolicy()
        self.stats = ClientStats()
        self._owns_http = http_client is None
        http_client = http_client or httpx.Client(
            timeout=self._timeout, follow_redirects=False, verify=_ssl_context()
        )
        if on_response is not None:
            # e.g. reading the server's Date header; runs on every response, retries included
            http_client.event_hooks["response"].append(on_response)
        agent = f"rl-sessions-dagster/{__version__} httpx/{httpx.__version__} python/"
        agent += platform.python_version() + (f" {user_agent_extra}" if user_agent_extra else "")
        http_client.headers.update(
            {"Authorization": f"Bearer {key}", "User-Agent": agent, "Accept": "application/json"}
        )
        self._http = http_client

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the connection pool (only when this client created it)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _request(
        self,
        method: str,
        path: str,
        model: type[M],
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        deadline: float | None = None,
    ) -> M:
        """One call with retries, parsed as ``model``; ``idempotent`` defaults to GET only."""
        url = self.base_url + path
        self.stats.calls += 1

        def attempt(budget: float | None) -> M:
            self.stats.requests += 1
            t = self._timeout
            if budget is not None:  # every phase clipped to the call's remaining budget
                clip = {k: budget if v is None else min(v, budget) for k, v in t.as_dict().items()}
                t = httpx.Timeout(**clip)
            request = self._http.build_request(
                method, url, params=params, json=json, headers=headers, timeout=t
            )
            try:
                response = self._http.send(request)
            except httpx.RequestError as exc:
                # A wrong host or certificate is raised at once, anything else is retryable.
                failure = configuration_failure(
                    exc,
                    method=method,
                    url=request.url,
                    base_url=self.base_url,
                    secrets=self._secrets,
                ) or transport_error(exc, method=method, url=request.url, secrets=self._secrets)
            else:
                return self._decode(response, model)
            # Raised outside ``except``: the httpx error (its request has the key) is not chained.
            raise failure

        return self.retry.call(
            attempt,
            endpoint=f"{method} {path}",
            idempotent=method == "GET" if idempotent is None else idempotent,
            deadline=deadline,
        )

    def _decode(self, response: httpx.Response, model: type[M]) -> M:
        if not response.is_success:
            raise error_from_response(
                response, secrets=self._secrets, retry_after=parse_retry_after(response.headers)
            )
        try:
            return model.model_validate_json(response.content)
        except pydantic.ValidationError as exc:
            error = exc
        # The slow path: a page item by item, an object with unreadable optional fields as None.
        page = parse_page(model, response.content, self._secrets)  # type: ignore[arg-type]
        if page is not None:
            self.stats.skipped_items += len(page.skipped)
            self.stats.repaired_items += sum(
                1 for i in page.data if getattr(i, "invalid_fields", 0)
            )
            return page  # type: ignore[return-value]
        if "invalid_fields" in model.model_fields:
            with contextlib.suppress(ValueError):  # not JSON
                instance, _ = salvage(model, json.loads(response.content))
                if instance is not None:
                    self.stats.repaired_items += 1
                    return instance
        problems = [
            f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}"
            for e in error.errors(include_url=False, include_input=False)[:3]
        ]
        if (more := error.error_count() - len(problems)) > 0:
            problems[-1] += f" (+{more} more)"
        request = response.request
        raise DecodeError(
            scrub(
                f"{request.method} {request.url.path} → {response.status_code}: response is not "
                f"a valid {model.__name__}: {'; '.join(problems)}",
                self._secrets,
            ),
            status_code=response.status_code,
            method=request.method,
            url=scrub(path_and_query(request.url), self._secrets),
            retryable=True,
        )

    def _poll(
        self,
        fetch: Callable[[float], T],
        done: Callable[[T], bool],
        describe: Callable[[T], str],
        *,
        poll_interval: float,
        until: float,
    ) -> T:
        """``fetch(until)`` every ``poll_interval`` s until ``done``; :class:`DeadlineExceeded`
        saying ``describe`` of the last object seen once ``until`` (absolute) comes first."""
        clock, sleep = self.retry.clock, self.retry.sleep
        last: T | None = None
        while True:
            try:
                item = fetch(until)
            except DeadlineExceeded as exc:
                if last is None:
                    raise
                raise DeadlineExceeded(
                    f"{describe(last)} when the wait ran out of time", last_error=exc
                ) from None
            if done(item):
                return item
            last = item
            if clock() + poll_interval >= until:
                raise DeadlineExceeded(f"{describe(item)} when the wait ran out of time")
            sleep(poll_interval)

    def _list_page(
        self,
        path: str,
        model: type[Page[T]],
        filters: Mapping[str, Any],
        *,
        after: str | None,
        limit: int,
        deadline: float | None,
    ) -> Page[T]:
        params = {"limit": check_page_size(limit, "limit"), **compact(after=after), **filters}
        return self._request("GET", path, model, params=params, deadline=deadline)

    def _iterate(
        self,
        path: str,
        model: type[Page[T]],
        filters: Mapping[str, Any],
        page_size: int,
        deadline: float | None,
        on_skipped: Callable[[SkippedItem], None] | None = None,
    ) -> Iterator[T]:
        """Every item of a list endpoint: arguments checked now, pages fetched lazily, one held at
        a time, its skipped items to ``on_skipped`` first; a repeated cursor is a DecodeError."""
        check_page_size(page_size)

        def items() -> Iterator[T]:
            after: str | None = None
            while True:
                page = self._list_page(
                    path, model, filters, after=after, limit=page_size, deadline=deadline
                )
                cursor = page.next_cursor
                if on_skipped is not None:
                    for skipped in page.skipped:
                        on_skipped(skipped)
                if cursor is None and page.meta.has_more and page.data:
                    # has_more without a cursor: the documented cursor is the last item's id.
                    cursor = getattr(page.data[-1], "id", None)
                yield from page.data
                del page  # hold one page at a time, not two, while the next one is fetched
                if cursor is None:
                    return
                if cursor == after:
                    raise DecodeError(f"GET {path}: pagination cursor did not advance ({after!r})")
                after = cursor

        return items()
