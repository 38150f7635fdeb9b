"""Which READY model resources sit idle and billing. The guard destroys something, so every rule
errs towards not stopping: a session not known to be finished keeps its resource."""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from pydantic import Field, ValidationInfo, field_validator
from pydantic.dataclasses import dataclass as checked_dataclass

from ..api.clock import to_ms
from ..api.enums import ModelResourceStatus, SessionStatus
from ..api.models import ModelResource, TrainingSession


@checked_dataclass(frozen=True)
class IdlePolicy:
    """What the guard may stop, checked when built; also the YAML's ``idle_guard:`` fields."""

    idle_seconds: float = Field(
        default=1800.0,
        gt=0,
        le=30 * 86400,
        description="How long since a READY resource was last used (a session started or "
        "ended on it, or it became READY) before it is stopped.",
    )
    created_by: str | None = Field(
        default="me", description='"me" (the key\'s own resources), a user id, or null (all).'
    )
    allow_ids: frozenset[str] = Field(
        default=frozenset(), description="Only these resource ids (empty: any)."
    )
    deny_ids: frozenset[str] = Field(default=frozenset(), description="Never these resource ids.")
    allow_base_models: frozenset[str] = Field(
        default=frozenset(), description="Only resources of these base models (empty: any)."
    )
    deny_base_models: frozenset[str] = Field(
        default=frozenset(), description="Never resources of these base models."
    )
    force: bool = Field(
        default=False,
        description="Also interrupt sessions already STOPPING (force=true); sessions in any "
        "other status, known or not, always keep the resource up.",
    )

    @field_validator("idle_seconds", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError(f"idle_seconds must be > 0, got {value!r}")
        return value

    @field_validator(
        "allow_ids", "deny_ids", "allow_base_models", "deny_base_models", mode="before"
    )
    @classmethod
    def _not_a_string(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, str):  # a set of its characters, silently, otherwise
            raise ValueError(f"{info.field_name} takes a list of strings, not the string {value!r}")
        return value

    def permits(self, resource: ModelResource) -> bool:
        if resource.id in self.deny_ids or (resource.base_model or "") in self.deny_base_models:
            return False
        if self.allow_ids and resource.id not in self.allow_ids:
            return False
        return not (self.allow_base_models and resource.base_model not in self.allow_base_models)

    @property
    def idle_ms(self) -> int:
        return int(self.idle_seconds * 1000)


@dataclass(frozen=True)
class ResourceUse:
    """``live``: sessions not known to be finished; ``interruptible``: STOPPING ones."""

    live: tuple[tuple[str, str], ...] = ()
    unreadable: int = 0
    last_use_ms: int | None = None
    interruptible: int = 0

    @property
    def busy(self) -> bool:
        return bool(self.live) or self.unreadable > 0


def resource_use(
    sessions: Iterable[TrainingSession], *, unreadable: int = 0, force: bool = False
) -> ResourceUse:
    """Fold the sessions listed (without a status filter) for one resource."""
    live: list[tuple[str, str]] = []
    marks: list[int] = []
    interruptible = 0
    for s in sessions:  # with ``force``, a STOPPING one counts as finished at its last update
        done = s.status.is_terminal or (force and s.status is SessionStatus.STOPPING)
        times = (to_ms(s.created_at), to_ms(s.updated_at) if done else None)
        marks += [t for t in times if t is not None]
        if not done:
            live.append((s.id, s.raw_status or s.status.value))
        elif not s.status.is_terminal:
            interruptible += 1
    return ResourceUse(tuple(sorted(live)), unreadable, max(marks, default=None), interruptible)


def idle_since(resource: ModelResource, last_use_ms: int | None = None) -> int | None:
    """The latest known moment the resource was used or became READY."""
    marks = [to_ms(resource.updated_at), last_use_ms]
    expires = to_ms(resource.expires_at)
    if expires is not None and resource.inactive_timeout:
        marks.append(expires - resource.inactive_timeout * 1000)
    return max((m for m in marks if m is not None), default=None)


class IdleVerdict(str, Enum):
    STOP = "stop"
    NOT_READY = "not_ready"
    NOT_PERMITTED = "not_in_policy"
    BUSY = "busy"
    UNREADABLE = "unreadable_sessions"
    RECENTLY_USED = "recently_used"
    IDLE_UNKNOWN = "idle_start_unknown"


@dataclass(frozen=True)
class Decision:
    resource: ModelResource
    verdict: IdleVerdict
    idle_since_ms: int | None = None
    now_ms: int = 0
    use: ResourceUse = ResourceUse()

    @property
    def stop(self) -> bool:
        return self.verdict is IdleVerdict.STOP

    @property
    def idle_ms(self) -> int:
        return 0 if self.idle_since_ms is None else max(0, self.now_ms - self.idle_since_ms)

    def explain(self) -> str:
        live, more, unreadable = self.use.live, len(self.use.live) - 3, self.use.unreadable
        busy = ", ".join(f"{sid} {status}" for sid, status in live[:3])
        why = {
            IdleVerdict.STOP: f"idle {self.idle_ms // 1000} s",
            IdleVerdict.NOT_READY: f"not READY ({self.resource.raw_status})",
            IdleVerdict.NOT_PERMITTED: "outside the guard's allow/deny lists",
            IdleVerdict.BUSY: f"live session(s) {busy}" + (f" and {more} more" if more > 0 else ""),
            IdleVerdict.UNREADABLE: f"{unreadable} session(s) could not be read, treated as live",
            IdleVerdict.RECENTLY_USED: f"used {self.idle_ms // 1000} s ago",
            IdleVerdict.IDLE_UNKNOWN: "no time of last use known",
        }
        return f"{self.resource.id}: {why[self.verdict]}"


def decide(
    resource: ModelResource, use: ResourceUse, policy: IdlePolicy, *, now_ms: int
) -> Decision:
    """Stop only a READY, permitted, idle resource with no live or unreadable session."""
    since = idle_since(resource, use.last_use_ms)
    reasons = (  # the first that holds
        (resource.status is not ModelResourceStatus.READY, IdleVerdict.NOT_READY),
        (not policy.permits(resource), IdleVerdict.NOT_PERMITTED),
        (bool(use.live), IdleVerdict.BUSY),
        (bool(use.unreadable), IdleVerdict.UNREADABLE),
        (since is None, IdleVerdict.IDLE_UNKNOWN),
        (since is not None and now_ms - since < policy.idle_ms, IdleVerdict.RECENTLY_USED),
    )
    verdict = next((v for holds, v in reasons if holds), IdleVerdict.STOP)
    return Decision(resource, verdict, since, now_ms, use)


def worth_a_look(resource: ModelResource, policy: IdlePolicy, *, now_ms: int) -> bool:
    """A cheap first pass on the resource's own fields (sessions only make idleness later)."""
    verdict = decide(resource, ResourceUse(), policy, now_ms=now_ms).verdict
    return verdict in (IdleVerdict.STOP, IdleVerdict.IDLE_UNKNOWN)
