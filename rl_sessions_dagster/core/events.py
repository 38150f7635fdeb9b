"""What a tick read and the events found in it, whose ``key`` is stable per fact (the run key)."""

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from ..api.enums import SessionStatus
from ..api.models import Checkpoint, InferenceCheckpoint, ModelResource, TrainingSession


class EventKind(str, Enum):
    """Terminal transitions get their own kind, other status changes the generic one."""

    CHECKPOINT_CREATED = "checkpoint_created"
    CHECKPOINT_REGISTERED = "checkpoint_registered"
    SESSION_STOPPED = "session_stopped"
    SESSION_ERROR = "session_error"
    SESSION_EXPIRED = "session_expired"
    SESSION_STATUS_CHANGED = "session_status_changed"


CHECKPOINT_EVENTS = frozenset({EventKind.CHECKPOINT_CREATED, EventKind.CHECKPOINT_REGISTERED})

TERMINAL_EVENT_FOR_STATUS = {
    SessionStatus.STOPPED: EventKind.SESSION_STOPPED,
    SessionStatus.ERROR: EventKind.SESSION_ERROR,
    SessionStatus.EXPIRED: EventKind.SESSION_EXPIRED,
}
TERMINAL_EVENTS = frozenset(TERMINAL_EVENT_FOR_STATUS.values())


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
        """Kind + session (+ checkpoint, or the status reached)."""
        if self.checkpoint is not None:
            return f"{self.kind.value}:{self.session.id}:{self.checkpoint.id}"
        if self.kind is EventKind.SESSION_STATUS_CHANGED:
            # A status can recur (unknown ones may oscillate): the update time tells them apart.
            updated = self.session.updated_at
            stamp = f"@{int(updated.timestamp() * 1000)}" if updated else ""
            return f"{self.kind.value}:{self.session.id}:{self.session.raw_status}{stamp}"
        return f"{self.kind.value}:{self.session.id}"

    def __repr__(self) -> str:
        return f"SessionEvent({self.key})"


class ResourceEventKind(str, Enum):
    RESOURCE_READY = "resource_ready"
    RESOURCE_ERROR = "resource_error"
    RESOURCE_STOPPED = "resource_stopped"
    RESOURCE_EXPIRING = "resource_expiring"
    RESOURCE_QUEUED_LONG = "resource_queued_long"


@dataclass(frozen=True)
class ResourceEvent:
    """One fact about a model resource, with its snapshot."""

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
        """As sent (a newer code passes through)."""
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


class ListOrder(str, Enum):
    """The finished-session list's undocumented order, verified by a complete pass."""

    UNVERIFIED = "unverified"
    NEWEST_FIRST = "newest_first"
    OLDEST_FIRST = "oldest_first"
    UNORDERED = "unordered"


@dataclass
class OrderEvidence:
    """What a pass has seen of the list's order (carried across ticks)."""

    oldest_ms: int | None = None
    newest_ms: int | None = None
    not_newest_first: bool = False
    not_oldest_first: bool = False
    #: an item older / newer than every one before it was seen: ties prove nothing.
    went_older: bool = False
    went_newer: bool = False

    def see(self, ms: int) -> None:
        if self.oldest_ms is not None:
            self.not_newest_first |= ms > self.oldest_ms
            self.went_older |= ms < self.oldest_ms
        if self.newest_ms is not None:
            self.not_oldest_first |= ms < self.newest_ms
            self.went_newer |= ms > self.newest_ms
        self.oldest_ms = ms if self.oldest_ms is None else min(self.oldest_ms, ms)
        self.newest_ms = ms if self.newest_ms is None else max(self.newest_ms, ms)

    def verdict(self) -> ListOrder:
        """The order a complete pass showed (tied times show none: the next pass checks again)."""
        if not self.not_newest_first and self.went_older:
            return ListOrder.NEWEST_FIRST
        if not self.not_oldest_first and self.went_newer:
            return ListOrder.OLDEST_FIRST
        if self.not_newest_first and self.not_oldest_first:
            return ListOrder.UNORDERED
        return ListOrder.UNVERIFIED

    @property
    def bits(self) -> int:
        flags = (self.not_newest_first, self.not_oldest_first, self.went_older, self.went_newer)
        return sum(1 << i for i, flag in enumerate(flags) if flag)

    @classmethod
    def of(cls, oldest_ms: int | None, newest_ms: int | None, bits: int) -> "OrderEvidence":
        return cls(oldest_ms, newest_ms, *(bool(bits & (1 << i)) for i in range(4)))


@dataclass
class ScannedPage:
    """A page, the ``after`` it was read with, and the order seen up to it."""

    after: str | None
    sessions: Sequence[TrainingSession]
    next_after: str | None = None
    evidence: OrderEvidence | None = None


@dataclass
class CheckpointRead:
    items: list[Checkpoint] = field(default_factory=list)
    times: OrderEvidence = field(default_factory=OrderEvidence)
    #: the read went below what was needed (or reached the end of the list).
    complete: bool = False

    @property
    def trusted(self) -> bool:  # newest first throughout
        return not self.times.not_newest_first


@dataclass(frozen=True)
class SessionFilter:
    """All fields given must match (``display_name`` is a glob), checked on each read: excluded
    sessions must never cost an evaluation. ``model_resources_id``, ``created_by`` filter lists."""

    model_resources_id: str | None = None
    created_by: str | None = None
    display_name: str | None = None
    wandb_project: str | None = None
    wandb_group: str | None = None
    predicate: Callable[[TrainingSession], bool] | None = None

    @property
    def needs_user_id(self) -> bool:
        return self.created_by == "me"

    def matches(
        self, session: TrainingSession, *, user_id: str | None = None, listed: bool = False
    ) -> bool:
        """``user_id``: who "me" is. ``listed``: from a list the API filtered, so a value it
        left out is taken on its word; a session fetched by id must show the value itself."""
        creator = user_id if self.needs_user_id else self.created_by
        wandb = session.metadata.wandb
        project, group = (wandb.project, wandb.group) if wandb is not None else (None, None)
        checks = (
            self.model_resources_id is None
            or _same(session.model_resources_id, self.model_resources_id, listed),
            self.created_by is None or _same(session.created_by, creator, listed),
            self.display_name is None
            or fnmatch.fnmatchcase(session.display_name or "", self.display_name),
            self.wandb_project is None or project == self.wandb_project,
            self.wandb_group is None or group == self.wandb_group,
        )
        return all(checks) and (self.predicate is None or bool(self.predicate(session)))


def _same(actual: str | None, wanted: str | None, listed: bool) -> bool:
    return listed if actual is None or wanted is None else actual == wanted


@dataclass(frozen=True)
class TrackerConfig:
    """``kinds`` are the events the caller wants (the cap counts only those)."""

    kinds: frozenset[EventKind] = frozenset(EventKind)
    max_events: int | None = None
    lookback_ms: int = 10 * 60 * 1000
    registration_wait_ms: int = 60 * 60 * 1000
    backfill: bool = False
    order_recheck_ms: int = 6 * 60 * 60 * 1000
    #: pages per tick of an unordered finished-session list: a quiet tick stays cheap.
    unordered_pages_per_tick: int | None = 8
    #: how often the unfiltered list is read again for unknown statuses.
    rediscover_ms: int = 6 * 60 * 60 * 1000

    @property
    def tracks_checkpoints(self) -> bool:
        return bool(self.kinds & CHECKPOINT_EVENTS)

    @property
    def checkpoints_only(self) -> bool:  # new sessions are then found by the checkpoint list
        return self.kinds <= CHECKPOINT_EVENTS


@dataclass
class Observation:
    now_ms: int
    #: the API's own clock (HTTP ``Date``) at the first read, if known.
    server_now_ms: int | None = None
    active: Sequence[TrainingSession] = ()
    pages: Sequence[ScannedPage] = ()
    #: the scan pass reached its end (last page, or below the newest-first floor).
    scan_complete: bool = False
    order_violation: bool = False
    #: sessions fetched by id (None: 404), and those the filter excludes.
    fetched: dict[str, TrainingSession | None] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    discovery_pages: Sequence[ScannedPage] = ()
    discovery_complete: bool = False
    unfilterable: Sequence[str] = ()
    #: the API refused the saved ``after`` of the scan / of the discovery pass.
    scan_rejected: bool = False
    discovery_rejected: bool = False
    #: checkpoint mode: the list read's sessions to adopt, newest time, order, newest per session.
    adopt: Sequence[str] = ()
    checkpoints_read_newest_ms: int | None = None
    checkpoint_list_untrusted: bool = False
    listed_checkpoint_ms: Mapping[str, int] = field(default_factory=dict)


E = TypeVar("E")
S = TypeVar("S")


@dataclass
class Outcome(Generic[E, S]):
    """What a tracker's tick decided (``deferred``: the cap left events for the next tick)."""

    events: list[E]
    state: S
    notes: list[str]
    deferred: bool = False
