"""What a sync run reads. A full walk lists every session; an incremental run reads only what can
have changed, with the sensors' core (``collect`` → ``advance``) on the sync's own
:class:`TrackerState`, kept in the tables' database: the active list, the finished sessions born
since the last run, the sessions that left the active list (by id) and those whose pending
registrations the checkpoint list shows landing. One way to find changes, sensors and sync alike.
"""

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import dagster as dg

from ..api import RLSessionsClient
from ..api.clock import ServerClock, to_ms
from ..api.enums import ACTIVE_SESSION_STATUSES, TERMINAL_SESSION_STATUSES, CheckpointType
from ..api.errors import (
    BadRequestError,
    DeadlineExceeded,
    DecodeError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TransportError,
)
from ..api.models import Checkpoint, TrainingSession
from ..api.pages import SkippedItem
from ..core.events import (
    ListOrder,
    Observation,
    OrderEvidence,
    ScannedPage,
    SessionFilter,
    TrackerConfig,
)
from ..core.reading import (
    ItemUnreadable,
    ListCursorRejected,
    SessionExcluded,
    StatusFilterRejected,
)
from ..core.state import TrackerState
from ..core.tracker import advance

#: Ten years: never on a clock, the reconciliation walk does it instead.
_NEVER_MS = 10 * 365 * 24 * 3600 * 1000

#: The sync's tracker policy: every kind tracked (statuses and checkpoints); an unordered list
#: is scanned whole each run (exact, at the cost of a walk of the finished sessions); the order
#: is re-checked and unknown statuses rediscovered by the reconciliation walk, not every 6 h.
SYNC_TRACKER_CONFIG = TrackerConfig(
    unordered_pages_per_tick=None, order_recheck_ms=_NEVER_MS, rediscover_ms=_NEVER_MS
)

#: What ends an incremental read early, keeping what it read (the run then fails).
TRANSIENT_ERRORS = (TransportError, ServerError, RateLimitError, DeadlineExceeded, DecodeError)

_ACTIVE = [s.short for s in ACTIVE_SESSION_STATUSES]
_TERMINAL = [s.short for s in TERMINAL_SESSION_STATUSES]

Page = tuple[list[TrainingSession], str | None]


@dataclass
class SyncSource:
    """The API client as the core's ``SessionSource`` for the sync, with the sync's filter (the
    API's word holds for what it filtered, as in a full walk). Assets may not import the
    sensors' adapter (the layers), so this one is the sync's, kept to what the sync needs."""

    client: RLSessionsClient
    filter: SessionFilter
    clock: ServerClock
    page_size: int = 100
    skipped: list[SkippedItem] = field(default_factory=list)
    user_id: str | None = None  # who "me" is, learnt from a list filtered by it

    def _page(self, statuses: Sequence[str] | None, after: str | None) -> Page:
        page = self.client.list_sessions_page(
            after=after,
            limit=self.page_size,
            status=list(statuses) if statuses is not None else None,
            model_resources_id=self.filter.model_resources_id,
            created_by=self.filter.created_by,
        )
        self.skipped.extend(getattr(page, "skipped", ()))
        creators = {s.created_by for s in page.data if s.created_by}
        if self.filter.needs_user_id and self.user_id is None and len(creators) == 1:
            self.user_id = creators.pop()
        return [s for s in page.data if self.filter.matches(s, listed=True)], page.next_cursor

    def _resumable(self, statuses: Sequence[str] | None, after: str | None) -> Page:
        try:
            return self._page(statuses, after)
        except (BadRequestError, NotFoundError) as exc:
            if after is None:
                raise
            raise ListCursorRejected(str(exc)) from None

    def list_active_page(self, after: str | None, extra_statuses: Sequence[str] = ()) -> Page:
        try:
            return self._page([*_ACTIVE, *extra_statuses], after)
        except BadRequestError as exc:
            if not extra_statuses:
                raise
            raise StatusFilterRejected(str(exc)) from None

    def list_terminal_page(self, after: str | None) -> Page:
        return self._resumable(_TERMINAL, after)

    def list_all_page(self, after: str | None) -> Page:
        return self._resumable(None, after)

    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]:
        page = self.client.list_checkpoints_page(
            after=after, limit=self.page_size, type=CheckpointType.INFERENCE
        )
        self.skipped.extend(getattr(page, "skipped", ()))
        return list(page.data), page.next_cursor

    def get_session(self, session_id: str) -> TrainingSession | None:
        try:
            session = self.client.get_session(session_id)
        except NotFoundError:
            return None
        except DecodeError as exc:
            raise ItemUnreadable(f"session {session_id}: {exc}") from None
        if self.filter.needs_user_id and self.user_id is None:
            self._page(None, None)  # one page filtered by "me" names "me"
        if not self.filter.matches(session, user_id=self.user_id):
            raise SessionExcluded(session_id)
        return session

    def server_time_ms(self) -> int | None:
        return self.clock.last_ms


_KEY_FIELDS = ("model_resources_id", "created_by", "display_name", "wandb_project", "wandb_group")


def state_key(asset_key: dg.AssetKey, flt: SessionFilter | None) -> str:
    """One state per sync asset and filter: another filter sees other sessions."""
    parts = [asset_key.to_user_string()]
    if flt is not None:
        parts += [f"{n}={v}" for n in _KEY_FIELDS if (v := getattr(flt, n)) is not None]
        if flt.predicate is not None:
            name = getattr(flt.predicate, "__qualname__", type(flt.predicate).__name__)
            parts.append(f"predicate={getattr(flt.predicate, '__module__', '')}.{name}")
    key = " ".join(parts)
    if len(key) > 255:  # the column's bound: keep it unique
        key = key[:230] + " #" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return key


@dataclass
class WalkWatch:
    """What a full walk saw that the tracker needs to start from it (its baseline) or to confirm
    the list's order: the live sessions, the newest one, the order of creation times."""

    clock: ServerClock
    now_ms: int
    live: list[TrainingSession] = field(default_factory=list)
    unknown: list[TrainingSession] = field(default_factory=list)
    newest: TrainingSession | None = None
    evidence: OrderEvidence = field(default_factory=OrderEvidence)
    server_now_ms: int | None = None
    complete: bool = False

    def watch(self, sessions: Iterable[TrainingSession]) -> Iterator[TrainingSession]:
        for s in sessions:
            if self.server_now_ms is None:  # the API's clock at the first page
                self.server_now_ms = self.clock.last_ms
            if s.status.is_active:
                self.live.append(s)
            elif not s.status.is_terminal:  # a status newer than this library
                self.unknown.append(s)
            if (ms := to_ms(s.created_at)) is not None:
                self.evidence.see(ms)
                if self.newest is None or ms > (to_ms(self.newest.created_at) or 0):
                    self.newest = s
            yield s
        self.complete = True

    def baseline(self) -> TrackerState:
        """The state a sensor's first tick would build from these sessions (they are history)."""
        shown = [*self.unknown, *([self.newest] if self.newest is not None else [])]
        obs = Observation(
            now_ms=self.now_ms,
            server_now_ms=self.server_now_ms,
            active=self.live,
            discovery_pages=[ScannedPage(None, shown, None)],
            discovery_complete=True,
        )
        state = advance(TrackerState(), obs, SYNC_TRACKER_CONFIG).state
        self.confirm_order(state)
        return state

    def confirm_order(self, state: TrackerState) -> None:
        """A complete walk checks the order as a complete scan pass would: newest first lets the
        next runs stop at the floor; any other verdict makes the next run's pass check again."""
        if not self.complete or state.scan is not None:
            return
        if self.evidence.verdict() is ListOrder.NEWEST_FIRST:
            if state.order in (ListOrder.UNVERIFIED, ListOrder.NEWEST_FIRST):
                state.order, state.verified_ms = ListOrder.NEWEST_FIRST, self.now_ms
        elif state.order is ListOrder.NEWEST_FIRST:
            state.order, state.tail = ListOrder.UNVERIFIED, None


def observed_sessions(obs: Observation) -> list[TrainingSession]:
    """Every session an incremental run read, fetched by id first (the latest reads)."""
    fetched = [s for s in obs.fetched.values() if s is not None]
    pages = [s for p in [*obs.pages, *obs.discovery_pages] for s in p.sessions]
    return [*fetched, *obs.active, *pages]


def gone_ids(obs: Observation) -> list[str]:
    """Sessions fetched by id that the API no longer knows (404)."""
    return [sid for sid, s in obs.fetched.items() if s is None]
