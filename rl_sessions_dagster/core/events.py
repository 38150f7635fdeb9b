"""What the core says: session events (what the session sensor turns into runs) and
model-resource events.

An event is a fact about one session or resource (it reached a status, it saved a checkpoint,
a checkpoint became registered). Its ``key`` is unique per fact and stable across ticks,
restarts and cursor resets, so it doubles as the Dagster ``run_key``.
"""

from dataclasses import dataclass
from enum import Enum

from ..api.enums import ModelResourceStatus, SessionStatus
from ..api.models import InferenceCheckpoint, ModelResource, TrainingSession


class EventKind(str, Enum):
    """What happened. Terminal transitions get their own kind, other changes the generic one."""

    CHECKPOINT_CREATED = "checkpoint_created"
    CHECKPOINT_REGISTERED = "checkpoint_registered"
    SESSION_STOPPED = "session_stopped"
    SESSION_ERROR = "session_error"
    SESSION_EXPIRED = "session_expired"
    SESSION_STATUS_CHANGED = "session_status_changed"


CHECKPOINT_EVENTS = frozenset({EventKind.CHECKPOINT_CREATED, EventKind.CHECKPOINT_REGISTERED})


TERMINAL_EVENTS = frozenset(
    {EventKind.SESSION_STOPPED, EventKind.SESSION_ERROR, EventKind.SESSION_EXPIRED}
)


TERMINAL_EVENT_FOR_STATUS = {
    SessionStatus.STOPPED: EventKind.SESSION_STOPPED,
    SessionStatus.ERROR: EventKind.SESSION_ERROR,
    SessionStatus.EXPIRED: EventKind.SESSION_EXPIRED,
}


@dataclass(frozen=True)
class SessionEvent:
    """One fact about a session, with the session snapshot it was seen in."""

    kind: EventKind
    session: TrainingSession
    checkpoint: InferenceCheckpoint | None = None
    previous_status: str | None = None

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def checkpoint_id(self) -> str | None:
        return self.checkpoint.id if self.checkpoint else None

    @property
    def step(self) -> int | None:
        return self.checkpoint.step if self.checkpoint else self.session.step

    @property
    def key(self) -> str:
        """Unique per fact: kind + session (+ checkpoint, or the status reached)."""
        if self.checkpoint is not None:
            return f"{self.kind.value}:{self.session.id}:{self.checkpoint.id}"
        if self.kind is EventKind.SESSION_STATUS_CHANGED:
            # A status can recur (unknown statuses may oscillate): the update time tells
            # the changes apart.
            updated = self.session.updated_at
            stamp = f"@{int(updated.timestamp() * 1000)}" if updated else ""
            return f"{self.kind.value}:{self.session.id}:{self.session.raw_status}{stamp}"
        return f"{self.kind.value}:{self.session.id}"

    def __repr__(self) -> str:
        return f"SessionEvent({self.key})"


#: Statuses a resource never leaves (there is no restart endpoint).
TERMINAL_RESOURCE_STATUSES = frozenset({ModelResourceStatus.STOPPED, ModelResourceStatus.ERROR})


class ResourceEventKind(str, Enum):
    """What happened to a model resource."""

    RESOURCE_READY = "resource_ready"
    RESOURCE_ERROR = "resource_error"
    RESOURCE_STOPPED = "resource_stopped"
    RESOURCE_EXPIRING = "resource_expiring"
    RESOURCE_QUEUED_LONG = "resource_queued_long"


ALL_RESOURCE_EVENT_KINDS = frozenset(ResourceEventKind)


_STATUS_EVENTS = {
    ModelResourceStatus.READY: ResourceEventKind.RESOURCE_READY,
    ModelResourceStatus.ERROR: ResourceEventKind.RESOURCE_ERROR,
    ModelResourceStatus.STOPPED: ResourceEventKind.RESOURCE_STOPPED,
}


@dataclass(frozen=True)
class ResourceEvent:
    """One fact about a model resource, with the snapshot it was seen in.

    ``expires_at_ms`` is set for ``resource_expiring``; ``queued_ms`` (how long it has been
    PENDING) for ``resource_queued_long``.
    """

    kind: ResourceEventKind
    resource: ModelResource
    previous_status: str | None = None
    expires_at_ms: int | None = None
    queued_ms: int | None = None

    @property
    def resource_id(self) -> str:
        return self.resource.id

    @property
    def queue_position(self) -> int | None:
        details = self.resource.status_details
        return details.queue_position if details is not None else None

    @property
    def error_code(self) -> str | None:
        """The raw error code (a code newer than this library is passed through as sent)."""
        return self.resource.error.code_raw if self.resource.error is not None else None

    @property
    def error_message(self) -> str | None:
        return self.resource.error.message if self.resource.error is not None else None

    @property
    def key(self) -> str:
        if self.kind is ResourceEventKind.RESOURCE_EXPIRING:
            return f"{self.kind.value}:{self.resource.id}:{self.expires_at_ms}"
        return f"{self.kind.value}:{self.resource.id}"

    def __repr__(self) -> str:
        return f"ResourceEvent({self.key})"
