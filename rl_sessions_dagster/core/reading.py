"""What one tick reads from a :class:`SessionSource`. A transient failure or a spent budget ends
collection early, keeping what was read; only failing to list active sessions aborts the tick."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol, TypeVar

from ..api.clock import to_ms
from ..api.models import Checkpoint, TrainingSession
from .events import CheckpointRead, ListOrder, Observation, ScannedPage, TrackerConfig
from .state import ScanPosition, TrackerState
from .tracker import checkpoint_floor, floor_ms

Page = tuple[list[TrainingSession], str | None]

T = TypeVar("T")

#: checkpoint-list pages read to re-check registrations before fetching the sessions by id.
RECHECK_PAGES = 5


class StatusFilterRejected(Exception):
    """The API refused the extra statuses in the active-list filter (it validates them)."""


class ItemUnreadable(Exception):
    """One item the API returned could not be read (drift): skipped, retried next tick."""


class SessionExcluded(Exception):
    """A session fetched by id is outside the sensor's filter: it is never tracked."""


class ListCursorRejected(Exception):
    """The API refused a saved ``after`` (the item is gone, or the cursor expired)."""


class SessionSource(Protocol):
    """Pages are ``(items, next_after or None)``, of finished sessions or all (``list_page``);
    list reads raise :class:`ListCursorRejected` (the active one :class:`StatusFilterRejected`);
    ``get_session`` returns None on a 404 or raises :class:`ItemUnreadable`/:class:`SessionExcluded`."""

    def list_active_page(self, after: str | None, extra_statuses: Sequence[str] = ()) -> Page: ...
    def list_page(self, after: str | None, *, terminal: bool) -> Page: ...
    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]: ...
    def get_session(self, session_id: str) -> TrainingSession | None: ...
    def server_time_ms(self) -> int | None: ...


class Interrupted(Exception):
    """Collection stops here; what was read is kept."""


@dataclass
class Collected:
    """What one tick read; every read goes through ``read`` (counted, budgeted, interruptible)."""

    observation: Observation
    #: why collection stopped early; "" when it did not.
    interrupted: str = ""
    requests: int = 0
    fetched_ids: list[str] = field(default_factory=list)
    #: fetched but unreadable (kept tracked, retried next tick).
    unreadable: list[str] = field(default_factory=list)
    out_of_time: Callable[[], bool] = field(default=lambda: False, repr=False)
    transient: tuple[type[BaseException], ...] = field(default=(), repr=False)

    def read(self, what: str, call: Callable[[], T]) -> T:
        if self.out_of_time():
            self.interrupted = f"time budget used up while {what}"
            raise Interrupted
        try:
            value = call()
        except self.transient as exc:
            self.interrupted = f"{type(exc).__name__}: {exc}"
            raise Interrupted from None
        self.requests += 1
        return value


def oldest_pending_ms(state: TrackerState, sessions: Iterable[str]) -> int | None:
    times = [p.created_ms for sid in sessions for p in state.tracked[sid].pending]
    return min((t for t in times if t is not None), default=None)


def registration_fetches(
    state: TrackerState, sessions: Sequence[str], read: CheckpointRead | None
) -> list[str]:
    """Waiting ``sessions`` with a checkpoint registered now, or unvouched (unlisted, untrusted)."""
    listed = {c.id: c.is_registered for c in read.items} if read and read.trusted else {}
    return [  # None: not listed; True: registered now
        sid
        for sid in sessions
        if any(listed.get(p.checkpoint_id) is not False for p in state.tracked[sid].pending)
    ]


def collect(
    state: TrackerState,
    config: TrackerConfig,
    source: SessionSource,
    *,
    now_ms: int,
    out_of_time: Callable[[], bool] = lambda: False,
    transient: tuple[type[BaseException], ...] = (),
    discovery_pages_per_tick: int | None = None,
) -> Collected:
    """Raises only if the active list cannot be read in full."""
    result = Collected(Observation(now_ms=now_ms), out_of_time=out_of_time, transient=transient)
    obs = result.observation

    active: list[TrainingSession] = []
    obs.active = active
    after: str | None = None
    # Unknown live statuses join the active-list filter (only full constants can be sent).
    prefix = "TRAINING_SESSION_STATUS_"
    extra = [s for s in state.extra_active if s.startswith(prefix) and s not in state.unfilterable]
    while True:
        try:
            page, after = source.list_active_page(after, extra)
        except StatusFilterRejected:  # sessions in those statuses are fetched by id instead
            result.requests += 1
            obs.unfilterable, extra = list(extra), []
            page, after = source.list_active_page(after, extra)
        result.requests += 1
        active.extend(page)
        if after is None:
            break
        if out_of_time():  # departures cannot be told apart: keep what was seen, stop
            result.interrupted = "time budget used up while listing active sessions"
            return result
    obs.server_now_ms = source.server_time_ms()
    try:
        # Departures first: their events are due, and a slow scan only delays its finds. Finished
        # sessions waiting for registrations need no fetch unless the checkpoint list says so.
        untrusted = state.checkpoint_list_untrusted
        lists = config.tracks_checkpoints and not untrusted
        waiting = [sid for sid, entry in state.tracked.items() if lists and entry.lingering]
        shown = {s.id for s in active}
        departed = [sid for sid in state.tracked if sid not in shown and sid not in waiting]
        _fetch(result, source, departed)
        # New checkpoints: through the checkpoint list in checkpoint mode, else by the scan.
        by_list = config.checkpoints_only and not (state.backfilling or untrusted)
        if state.initialized and by_list:  # one read down to the floor or the oldest pending
            shown |= set(obs.fetched)
            due = [sid for sid in waiting if sid not in shown]
            floor = checkpoint_floor(state, config)
            below = oldest_pending_ms(state, due)
            need = floor if below is None else min(floor, below)
            read = read_checkpoints(result, source, need)
            if read.trusted:
                # Unfollowed sessions with a checkpoint above the floor are new; remembered ones
                # (retired, filtered out) still listed stay remembered, never fetched.
                known = {*shown, *state.tracked, *state.recent_checkpoints}
                listed = [(c.session_id, to_ms(c.created_at)) for c in read.items]
                new = (i for i, ms in listed if i not in known and ms is not None and ms >= floor)
                obs.adopt = [sid for sid in dict.fromkeys(new) if sid is not None]
                remembered = {*state.recent_checkpoints, *obs.adopt}
                newest: dict[str, int] = {}
                for sid, ms in listed:
                    if sid is not None and sid in remembered and ms is not None:
                        newest[sid] = max(ms, newest.get(sid, ms))
                obs.listed_checkpoint_ms = newest
            # Untrusted, the read vouches for nothing: every session due is fetched.
            _fetch(result, source, [*registration_fetches(state, due, read), *obs.adopt])
            if read.trusted and read.complete:  # only once the sessions it found were fetched
                obs.checkpoints_read_newest_ms = read.times.newest_ms
        else:
            _scan_pages(result, state, config, source)
        # The discovery pass (upkeep) gets what is left of the budget.
        start = state.discovery if state.initialized else ScanPosition()
        if start is not None:
            pages = obs.discovery_pages = []
            limit = discovery_pages_per_tick if state.initialized else None
            what = "discovering sessions in unknown statuses"
            list_all = partial(source.list_page, terminal=False)
            ended = _page(result, what, list_all, pages, start.after, limit)
            obs.discovery_complete, obs.discovery_rejected = ended == "end", ended == "rejected"
        if state.initialized and not by_list:
            shown = {s.id for s in active} | {s.id for p in obs.pages for s in p.sessions}
            due = [sid for sid in waiting if sid not in shown]
            below = oldest_pending_ms(state, due)  # None when nothing is due
            recheck = None
            if below is not None:
                recheck = read_checkpoints(result, source, below, max_pages=RECHECK_PAGES)
            _fetch(result, source, registration_fetches(state, due, recheck))
    except Interrupted:
        pass
    result.fetched_ids = list(obs.fetched)
    return result


def _fetch(result: Collected, source: SessionSource, ids: Sequence[str]) -> None:
    fetched, excluded = result.observation.fetched, result.observation.excluded
    for sid in ids:
        if sid in fetched or sid in excluded:
            continue
        what = f"fetching sessions ({len(fetched) + len(excluded)} of {len(ids)} done)"
        try:
            fetched[sid] = result.read(what, partial(source.get_session, sid))
        except (ItemUnreadable, SessionExcluded) as exc:
            result.requests += 1
            (result.unreadable if isinstance(exc, ItemUnreadable) else excluded).append(sid)


def _page(
    result: Collected,
    what: str,
    list_page: Callable[[str | None], Page],
    pages: list[ScannedPage],
    after: str | None,
    max_pages: int | None,
    last: Callable[[ScannedPage], bool] = lambda page: False,
) -> str:
    """Read into ``pages``: "end" (or ``last``), "rejected" (``after``), "" (``max_pages``)."""
    while max_pages is None or len(pages) < max_pages:
        try:
            sessions, next_after = result.read(what, partial(list_page, after))
        except ListCursorRejected:
            return "rejected"
        pages.append(page := ScannedPage(after, sessions, next_after))
        if last(page) or next_after is None:
            return "end"
        after = next_after
    return ""


def _scan_pages(
    result: Collected, state: TrackerState, config: TrackerConfig, source: SessionSource
) -> None:
    """Page the finished-session list, noting its order: newest first, a pass stops below the
    floor; oldest first, it follows the tail (new sessions are appended after it)."""
    obs = result.observation
    order = state.order if state.initialized and not state.backfilling else ListOrder.UNVERIFIED
    start = ScanPosition()
    if state.initialized:
        start = state.scan or (state.tail if order is ListOrder.OLDEST_FIRST else None) or start
    below = floor_ms(state, config) if order is ListOrder.NEWEST_FIRST else None
    max_pages = config.unordered_pages_per_tick if order is ListOrder.UNORDERED else None
    if not state.initialized and not config.backfill:
        max_pages = 1  # a first tick's newest page is history
    pages = obs.pages = []
    evidence = replace(start.evidence)

    def last(page: ScannedPage) -> bool:
        stop_here = False
        fresh = page.sessions
        if len(pages) == 1 and start.done_through is not None:
            # A page read again (resumed pass, oldest-first tail): only what follows is new.
            ids = [s.id for s in fresh]
            if start.done_through in ids:
                fresh = fresh[ids.index(start.done_through) + 1 :]
        for s in fresh:
            ms = to_ms(s.created_at)
            if ms is None:
                continue
            evidence.see(ms)
            if order is ListOrder.NEWEST_FIRST:
                obs.order_violation |= evidence.not_newest_first
            elif order is ListOrder.OLDEST_FIRST:
                obs.order_violation |= evidence.not_oldest_first
            stop_here |= below is not None and not obs.order_violation and ms < below
        page.evidence = replace(evidence)
        return stop_here

    list_terminal = partial(source.list_page, terminal=True)
    what = "scanning finished sessions"
    ended = _page(result, what, list_terminal, pages, start.after, max_pages, last)
    obs.scan_complete, obs.scan_rejected = ended == "end", ended == "rejected"


def read_checkpoints(
    result: Collected, source: SessionSource, need_below_ms: int, max_pages: int | None = None
) -> CheckpointRead:
    """Page from the top until an item is older than ``need_below_ms``."""
    read = CheckpointRead()
    after: str | None = None
    list_page = source.list_inference_checkpoints_page
    pages = 0
    while max_pages is None or pages < max_pages:
        items, after = result.read("reading the checkpoint list", partial(list_page, after))
        pages += 1
        read.items.extend(items)
        for c in items:
            if (ms := to_ms(c.created_at)) is not None:
                read.times.see(ms)
        oldest = read.times.oldest_ms
        if after is None or (oldest is not None and oldest < need_below_ms):
            read.complete = True
            break
    result.observation.checkpoint_list_untrusted = not read.trusted
    return read
