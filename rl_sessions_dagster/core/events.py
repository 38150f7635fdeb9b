"""Session events: what the sensors turn into runs.

An event is a fact about one session (it reached a status, it saved a checkpoint, a checkpoint
became registered). Its ``key`` is unique per fact and stable across ticks, restarts and cursor
resets, so it doubles as the Dagster ``run_key``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..api.enums import SessionStatus

if TYPE_CHECKING:  # the models load with the first tick, not with the definitions
    from ..api.models import InferenceCheckpoint, TrainingSession


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
