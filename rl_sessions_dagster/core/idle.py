"""Which READY model resources sit idle and billing: the pure part of the idle guard.

A resource is idle when no non-terminal session (anyone's) is attached. It has been idle since
the latest of: the time it became READY (its ``updated_at``), its last activity as the API
publishes it (``expires_at - inactive_timeout``), and the end of its last session. The guard
acts only past a threshold and only within the policy: the caller's own resources unless
configured, allow and deny lists by id or base model (deny wins).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..api.enums import ModelResourceStatus
from ..api.models import ModelResource, TrainingSession
from .tracker import to_ms


@dataclass(frozen=True)
class IdlePolicy:
    """What the guard may stop. Empty allow lists allow everything."""

    idle_seconds: float = 1800.0
    allow_ids: frozenset[str] = frozenset()
    deny_ids: frozenset[str] = frozenset()
    allow_base_models: frozenset[str] = frozenset()
    deny_base_models: frozenset[str] = frozenset()

    def permits(self, resource: ModelResource) -> bool:
        if resource.id in self.deny_ids or (resource.base_model or "") in self.deny_base_models:
            return False
        if self.allow_ids and resource.id not in self.allow_ids:
            return False
        return not (self.allow_base_models and resource.base_model not in self.allow_base_models)


@dataclass(frozen=True)
class IdleResource:
    resource: ModelResource
    idle_since_ms: int

    def idle_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self.idle_since_ms)


def busy_resources(active_sessions: Iterable[TrainingSession]) -> set[str]:
    """Resources with at least one non-terminal session attached (unknown statuses count)."""
    return {
        s.model_resources_id for s in active_sessions if s.model_resources_id and not s.is_terminal
    }


def idle_since(resource: ModelResource, last_session_end_ms: int | None = None) -> int | None:
    """The latest known moment the resource was in use or became READY (None if unknown)."""
    marks = [to_ms(resource.updated_at), last_session_end_ms]
    expires = to_ms(resource.expires_at)
    if expires is not None and resource.inactive_timeout:
        marks.append(expires - resource.inactive_timeout * 1000)
    known = [m for m in marks if m is not None]
    return max(known) if known else None


def idle_candidates(
    resources: Iterable[ModelResource],
    busy: set[str],
    policy: IdlePolicy,
    *,
    now_ms: int,
    last_session_end_ms: Mapping[str, int] | None = None,
) -> list[IdleResource]:
    """READY, permitted, without an attached session, idle for longer than the threshold;
    longest idle first. ``last_session_end_ms`` refines the idle start (else resource fields)."""
    ends = last_session_end_ms or {}
    out = []
    for r in resources:
        if r.status is not ModelResourceStatus.READY or r.id in busy or not policy.permits(r):
            continue
        since = idle_since(r, ends.get(r.id))
        if since is None or now_ms - since <= policy.idle_seconds * 1000:
            continue
        out.append(IdleResource(r, since))
    out.sort(key=lambda i: (i.idle_since_ms, i.resource.id))
    return out
