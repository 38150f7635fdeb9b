"""The session tracker's inputs and outputs: its policy (:class:`TrackerConfig`), what one
tick read (:class:`Observation`, with the pages and the checkpoint-list read it holds), and what
the tick decided (:class:`TickOutcome`)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..api.clock import to_ms
from ..api.models import Checkpoint, InferenceCheckpoint, TrainingSession
from .events import CHECKPOINT_EVENTS, EventKind, SessionEvent
from .state import ListOrder, OrderEvidence, ScanPosition, TrackerState, short_id


@dataclass
class ScannedPage:
    """One page of a session list, with the ``after`` it was requested with."""

    after: str | None
    sessions: Sequence[TrainingSession]
    next_after: str | None = None
    #: what the pass saw of the order up to the end of this page.
    evidence: OrderEvidence | None = None


@dataclass
class CheckpointRead:
    """One tick's read of the checkpoint list, from the top."""

    items: list[Checkpoint] = field(default_factory=list)
    oldest_ms: int | None = None
    newest_ms: int | None = None
    #: the read went below what was needed (or reached the end of the list).
    complete: bool = False
    #: the list was newest first throughout the read.
    trusted: bool = True

    @property
    def by_id(self) -> dict[str, Checkpoint]:
        return {c.id: c for c in self.items}


ALL_EVENT_KINDS = frozenset(EventKind)


@dataclass(frozen=True)
class TrackerConfig:
    """Policy knobs. ``kinds`` are the events the caller wants (the cap counts only those)."""

    kinds: frozenset[EventKind] = ALL_EVENT_KINDS
    max_events: int | None = None
    lookback_ms: int = 10 * 60 * 1000
    registration_wait_ms: int = 60 * 60 * 1000
    backfill: bool = False
    #: how often a complete pass re-checks that the session list is still newest first.
    order_recheck_ms: int = 6 * 60 * 60 * 1000
    #: an unordered finished-session list is scanned this many pages per tick at most, so a
    #: quiet tick stays cheap at any history size; a session born and ended between two
    #: ticks is then reported within two passes (docs/how-it-works.md, "Any list order").
    unordered_pages_per_tick: int | None = 8
    #: how often the unfiltered list is read again for sessions in statuses never seen yet
    #: (a new status first worn by a session this tracker never met is otherwise invisible).
    rediscover_ms: int = 6 * 60 * 60 * 1000

    @property
    def tracks_checkpoints(self) -> bool:
        """A status-only sensor keeps no checkpoint state (and re-checks no registrations)."""
        return bool(self.kinds & CHECKPOINT_EVENTS)

    @property
    def checkpoints_only(self) -> bool:
        """A checkpoint sensor finds sessions born between ticks through the checkpoint list."""
        return self.kinds <= CHECKPOINT_EVENTS


@dataclass(frozen=True)
class ScanPlan:
    """How the glue should page the terminal-session list this tick."""

    start: ScanPosition
    #: newest-first mode: stop paging once an item was created before this (epoch ms).
    stop_below_ms: int | None
    #: 1 on a first tick without backfill: the newest finished sessions are remembered as
    #: history (the server clock has one-second resolution), nothing is announced;
    #: ``unordered_pages_per_tick`` on an unordered list.
    max_pages: int | None = None
    #: the order the pass relies on (a violation of it sends the tracker back to verifying).
    expect: ListOrder = ListOrder.UNVERIFIED


@dataclass
class Observation:
    """What the API showed during one tick."""

    now_ms: int
    #: the API's own clock (HTTP ``Date``) at the first read, if known.
    server_now_ms: int | None = None
    active: Sequence[TrainingSession] = ()
    active_complete: bool = True
    pages: Sequence[ScannedPage] = ()
    #: True when the scan pass reached its end (last page, or below the newest-first floor).
    scan_complete: bool = False
    order_violation: bool = False
    #: sessions fetched by id; None means the API answered 404.
    fetched: Mapping[str, TrainingSession | None] = field(default_factory=dict)
    #: pages of the unfiltered list read for the discovery pass, and whether it ended.
    discovery_pages: Sequence[ScannedPage] = ()
    discovery_complete: bool = False
    #: extra statuses the API refused as filter values this tick.
    unfilterable: Sequence[str] = ()
    #: the API refused the saved ``after`` of the scan / of the discovery pass.
    scan_rejected: bool = False
    discovery_rejected: bool = False
    #: checkpoint mode: sessions fetched because a checkpoint of theirs is new (to adopt),
    #: the newest checkpoint time of a complete read of the list, and whether it was ordered.
    adopt: Sequence[str] = ()
    checkpoints_read_newest_ms: int | None = None
    checkpoint_list_untrusted: bool = False
    #: sessions fetched by id that the sensor's filter excludes: never tracked.
    excluded: Sequence[str] = ()
    #: checkpoint mode: the newest listed checkpoint of each session adopted or remembered.
    listed_checkpoint_ms: Mapping[str, int] = field(default_factory=dict)


@dataclass
class TickOutcome:
    events: list[SessionEvent]
    state: TrackerState
    notes: list[str]
    deferred: bool = False


def checkpoint_key(c: InferenceCheckpoint) -> tuple[int, str]:
    """Total order on a session's checkpoints: creation time (or step), then a short id hash."""
    primary = to_ms(c.created_at)
    if primary is None:
        primary = c.step or 0
    return primary, short_id(c.id)
