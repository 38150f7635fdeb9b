"""Provision, wait, stop over :class:`RLSessionsClient`. Every wait is bounded (``timeout`` and/or
``deadline``, the earlier wins); a failed object raises a typed error with it and its API error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ._http import compact, wait_deadline
from .client import RLSessionsClient
from .enums import TERMINAL_SESSION_STATUSES, ModelResourceStatus, SessionStatus
from .errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    TogetherRLError,
)
from .models import ComputeConfig, ModelResource, TrainingSession

_RESOURCE_GONE = {ModelResourceStatus[n] for n in ("STOPPED", "ERROR", "STOPPING")}
_SESSION_ENDED = TERMINAL_SESSION_STATUSES | {SessionStatus.STOPPING}


class WaitFailed(TogetherRLError):
    """An awaited object ended badly; its error code and message become this error's."""

    def __init__(self, message: str, error: Any) -> None:
        super().__init__(
            message,
            error_code=error.code_raw if error else None,
            api_message=error.message if error else None,
        )


class ResourceFailed(WaitFailed):
    """The model resource reached ERROR / STOPPING / STOPPED while it was awaited."""

    def __init__(self, message: str, resource: ModelResource) -> None:
        super().__init__(message, resource.error)
        self.resource = resource


class SessionFailed(WaitFailed):
    """The session ended (ERROR, STOPPED, EXPIRED...) before it became RUNNING."""

    def __init__(self, message: str, session: TrainingSession) -> None:
        super().__init__(message, session.error)
        self.session = session


@dataclass(frozen=True)
class ResourceSpec:
    """A model-resource configuration: what to create, match for reuse, and price. ``None`` takes
    the API's default and matches anything (but ``base_weights_ref`` must be equal)."""

    base_model: str
    lora_enabled: bool = True
    gpu_type: str | None = None
    num_generator_replicas: int | None = None
    optimizer_config: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    inactive_timeout: int | None = None
    base_weights_ref: str | None = None

    def request_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``create_model_resource`` and ``estimate_model_resource_cost``."""
        compute = compact(
            gpu_type=self.gpu_type, num_generator_replicas=self.num_generator_replicas
        )
        return {
            "lora_enabled": self.lora_enabled,
            "compute_config": compute or None,
            "optimizer_config": self.optimizer_config,
            "inactive_timeout": self.inactive_timeout,
            "base_weights_ref": self.base_weights_ref,
        }

    def matches(self, resource: ModelResource) -> bool:
        compute = resource.compute_config or ComputeConfig()
        return (
            resource.base_model == self.base_model
            and resource.lora_enabled in (None, self.lora_enabled)
            and self.gpu_type in (None, compute.gpu_type)
            and self.num_generator_replicas in (None, compute.num_generator_replicas)
            and self.optimizer_config in (None, _optimizer_dict(resource))
            and resource.base_weights_ref == self.base_weights_ref
        )

    def price_key(self) -> str:
        """The configuration as ``estimate-cost`` sees it, for price caching."""
        config = {"base_model": self.base_model, **self.request_kwargs()}
        return json.dumps(config, sort_keys=True, separators=(",", ":"))

    @classmethod
    def of(cls, resource: ModelResource) -> ResourceSpec:
        """The configuration of an existing resource (to price it)."""
        compute = resource.compute_config
        return cls(
            base_model=resource.base_model or "",
            lora_enabled=True if resource.lora_enabled is None else resource.lora_enabled,
            gpu_type=compute.gpu_type if compute else None,
            num_generator_replicas=compute.num_generator_replicas if compute else None,
            optimizer_config=_optimizer_dict(resource),
            inactive_timeout=resource.inactive_timeout,
            base_weights_ref=resource.base_weights_ref,
        )


class PriceCache:
    """``price_per_hour`` per configuration; a failure is kept as ``(None, None)`` (one request
    per unpriceable configuration), its message in :attr:`errors`."""

    def __init__(self, client: RLSessionsClient) -> None:
        self.client = client
        self.prices: dict[str, tuple[float | None, str | None]] = {}
        self.requests = 0
        self.errors: list[str] = []

    def price(self, resource: ModelResource) -> tuple[float | None, str | None]:
        spec = ResourceSpec.of(resource)
        key = spec.price_key()
        if key not in self.prices:
            self.requests += 1
            try:
                est = self.client.estimate_model_resource_cost(
                    spec.base_model, **spec.request_kwargs()
                )
                self.prices[key] = (est.price_per_hour, est.currency)
            except TogetherRLError as exc:
                self.errors.append(f"{resource.id}: {exc}")
                self.prices[key] = (None, None)
        return self.prices[key]


def _optimizer_dict(resource: ModelResource) -> dict[str, Any] | None:
    """As sent on create (wire names, no nulls)."""
    config = resource.optimizer_config
    return None if config is None else config.model_dump(by_alias=True, exclude_none=True)


def monotonic_deadline(seconds: float) -> float:
    """An absolute deadline on the retry policy's default clock."""
    return time.monotonic() + seconds


def _ended(what: str, obj: ModelResource | TrainingSession) -> str:
    msg = f"{what} is {obj.raw_status}"
    if obj.error is not None:
        msg += f": {obj.error.code_raw or 'no code'}: {obj.error.message or ''}".rstrip(": ")
    return msg


def find_ready_resource(
    client: RLSessionsClient,
    spec: ResourceSpec,
    *,
    created_by: str | None = "me",
    deadline: float | None = None,
) -> ModelResource | None:
    """The oldest READY resource matching ``spec`` (the caller's own by default), or None; a
    free session slot is not visible (creating the session tells, with a 429)."""
    listed = client.list_model_resources(
        status=[ModelResourceStatus.READY], created_by=created_by, deadline=deadline
    )
    ready = (r for r in listed if r.status is ModelResourceStatus.READY and spec.matches(r))
    return min(ready, key=lambda r: (r.created_at is None, r.created_at, r.id), default=None)


def wait_for_resource_ready(
    client: RLSessionsClient,
    resource_id: str,
    *,
    timeout: float | None = 3600.0,
    deadline: float | None = None,
    poll_interval: float = 10.0,
    on_poll: Callable[[ModelResource], None] | None = None,
) -> ModelResource:
    """Poll until READY; :class:`ResourceFailed` on ERROR/STOPPING/STOPPED,
    :class:`DeadlineExceeded` when the time is up (a PENDING resource may queue for long)."""

    def fetch(until: float) -> ModelResource:
        r = client.get_model_resource(resource_id, deadline=until)
        if on_poll is not None:
            on_poll(r)
        if r.status in _RESOURCE_GONE:
            raise ResourceFailed(_ended(f"model resource {resource_id}", r), r)
        return r

    def describe(r: ModelResource) -> str:
        pos = r.status_details.queue_position if r.status_details else None
        where = f" (queue position {pos})" if pos is not None else ""
        return f"model resource {resource_id} still {r.raw_status or 'without status'}{where}"

    return client._poll(
        fetch,
        lambda r: r.status is ModelResourceStatus.READY,
        describe,
        poll_interval=poll_interval,
        until=wait_deadline(client, timeout, deadline),
    )


def wait_for_session_running(
    client: RLSessionsClient,
    session_id: str,
    *,
    timeout: float | None = 3600.0,
    deadline: float | None = None,
    poll_interval: float = 5.0,
) -> TrainingSession:
    """Poll until RUNNING; :class:`SessionFailed` if it ends (or is STOPPING, as in the SDK)."""

    def fetch(until: float) -> TrainingSession:
        s = client.get_session(session_id, deadline=until)
        if s.status in _SESSION_ENDED:
            raise SessionFailed(_ended(f"session {session_id}", s), s)
        return s

    return client._poll(
        fetch,
        lambda s: s.status is SessionStatus.RUNNING,
        lambda s: f"session {session_id} still {s.raw_status or 'without status'}",
        poll_interval=poll_interval,
        until=wait_deadline(client, timeout, deadline),
    )


StopResult = Literal[
    "stopped", "already_stopped", "refused_active_sessions", "not_permitted", "not_found"
]


@dataclass(frozen=True)
class StopOutcome:
    """What a stop call achieved (``"refused_active_sessions"``: without force while sessions
    are active; ``"not_permitted"``: a 403)."""

    target_id: str
    result: StopResult
    detail: str = ""
    resource: ModelResource | None = None

    @property
    def ok(self) -> bool:
        return self.result in ("stopped", "already_stopped", "not_found")


def stop_session(
    client: RLSessionsClient, session_id: str, *, deadline: float | None = None
) -> StopOutcome:
    """Stop a session unless it already ended; never raises for "already gone"."""
    try:
        s = client.get_session(session_id, deadline=deadline)
    except NotFoundError:
        return StopOutcome(session_id, "not_found")
    if s.status in _SESSION_ENDED:
        return StopOutcome(session_id, "already_stopped", s.raw_status)
    try:
        client.stop_session(session_id, deadline=deadline)
    except NotFoundError:
        return StopOutcome(session_id, "not_found")
    except PermissionDeniedError as exc:
        return StopOutcome(session_id, "not_permitted", str(exc))
    except (BadRequestError, ConflictError) as exc:
        # Raced with an end of the session (e.g. it expired): check rather than guess.
        again = client.get_session(session_id, deadline=deadline)
        if again.status in _SESSION_ENDED:
            return StopOutcome(session_id, "already_stopped", again.raw_status)
        raise exc
    return StopOutcome(session_id, "stopped")


def stop_resource(
    client: RLSessionsClient,
    resource_id: str,
    *,
    force: bool = False,
    deadline: float | None = None,
) -> StopOutcome:
    """Stop a model resource and say what happened, raising for none of the expected refusals."""
    try:
        r = client.get_model_resource(resource_id, deadline=deadline)
    except NotFoundError:
        return StopOutcome(resource_id, "not_found")
    if r.status in _RESOURCE_GONE:
        return StopOutcome(resource_id, "already_stopped", r.raw_status, r)
    try:
        stopped = client.stop_model_resource(resource_id, force=force, deadline=deadline)
    except NotFoundError:
        return StopOutcome(resource_id, "not_found")
    except PermissionDeniedError as exc:
        return StopOutcome(resource_id, "not_permitted", str(exc), r)
    except (BadRequestError, ConflictError) as exc:
        again = client.get_model_resource(resource_id, deadline=deadline)
        if again.status in _RESOURCE_GONE:
            return StopOutcome(resource_id, "already_stopped", again.raw_status, again)
        if not force:
            return StopOutcome(resource_id, "refused_active_sessions", str(exc), again)
        raise
    return StopOutcome(resource_id, "stopped", stopped.raw_status, stopped)
