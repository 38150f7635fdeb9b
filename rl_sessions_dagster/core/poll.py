"""One tick's reads, in order, against any session source (the HTTP client or an in-memory
fake): list the active sessions, fetch by id the tracked ones that left that list, continue a
discovery pass over the unfiltered list if one is due, page the finished-session list as
planned, and re-check pending registrations of finished sessions.

It holds no I/O of its own; the source does. A read that fails transiently, or a budget that
runs out, ends collection early with what was read so far marked incomplete, so progress is
kept and the rest follows on the next tick. Only a failure to list the active sessions aborts
the tick, since without that list nothing can be concluded.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

from ..api.models import Checkpoint, TrainingSession
from .passes import ScannedPage
from .state import ListOrder, TrackerState
from .tracker import (
    Observation,
    TrackerConfig,
    active_filter,
    discovery_start,
    plan_scan,
    sessions_to_fetch,
    to_ms,
)

Page = tuple[list[TrainingSession], str | None]
T = TypeVar("T")


class StatusFilterRejected(Exception):
    """The API refused the extra statuses in the active-list filter (it validates them)."""


class ItemUnreadable(Exception):
    """One item the API returned could not be read (drift): skipped, retried next tick."""


class ListCursorRejected(Exception):
    """The API refused a saved ``after`` (the item is gone, or the cursor expired)."""


class SessionSource(Protocol):
    """What the tracker needs to read. Pages return ``(items, next_after or None)``."""

    def list_active_page(self, after: str | None, extra_statuses: Sequence[str] = ()) -> Page:
        """Sessions in the known active statuses plus ``extra_statuses`` (raw constants).

        Raises :class:`StatusFilterRejected` if the API refuses those extra statuses."""
        ...

    def list_terminal_page(self, after: str | None) -> Page:
        """Finished sessions; raises :class:`ListCursorRejected` for a refused ``after``."""
        ...

    def list_all_page(self, after: str | None) -> Page:
        """The session list without a status filter (for the discovery pass); raises
        :class:`ListCursorRejected` for a refused ``after``."""
        ...

    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]:
        """The inference-checkpoint list, newest first (documented order)."""
        ...

    def get_session(self, session_id: str) -> TrainingSession | None:
        """The session, or None when the API answers 404; raises :class:`ItemUnreadable`
        when its body cannot be read."""
        ...

    def server_time_ms(self) -> int | None:
        """The API's clock (HTTP ``Date``) at the last response, if known."""
        ...


@dataclass
class Collected:
    observation: Observation
    #: why collection stopped early ("" when it did not): budget, or the transient error.
    interrupted: str = ""
    requests: int = 0
    fetched_ids: list[str] = field(default_factory=list)
    #: sessions whose fetch returned something unreadable (kept tracked, retried next tick).
    unreadable: list[str] = field(default_factory=list)


class _Interrupted(Exception):
    """Collection stops here; what was read is kept."""


def collect(
    state: TrackerState,
    config: TrackerConfig,
    source: SessionSource,
    *,
    now_ms: int,
    out_of_time: Callable[[], bool] = lambda: False,
    transient: tuple[type[BaseException], ...] = (),
    max_fetches: int | None = None,
    discovery_pages_per_tick: int | None = None,
    recheck_pages: int = 5,
) -> Collected:
    """Read what this tick needs. Raises only if the active list cannot be read in full.

    ``discovery_pages_per_tick`` bounds the unfiltered pass after the first tick (the first
    tick reads as much of it as the budget allows); ``recheck_pages`` bounds the pages of the
    checkpoint list read to re-check registrations before falling back to fetches by id.
    """
    result = Collected(Observation(now_ms=now_ms))
    obs = result.observation

    active: list[TrainingSession] = []
    after: str | None = None
    extra = active_filter(state)
    while True:
        try:
            page, after = source.list_active_page(after, extra)
        except StatusFilterRejected:
            # Sessions in those statuses stay tracked and are fetched by id instead.
            result.requests += 1
            obs.unfilterable, extra = list(extra), []
            page, after = source.list_active_page(after, extra)
        result.requests += 1
        active.extend(page)
        if after is None:
            break
        if out_of_time():
            # Without the whole active list, departures cannot be told apart: keep what we
            # saw (new checkpoints still count) and skip the rest of the tick.
            obs.active, obs.active_complete = active, False
            result.interrupted = "time budget used up while listing active sessions"
            return result
    obs.active = active
    obs.server_now_ms = source.server_time_ms()
    reader = _Reader(result, out_of_time, transient)
    try:
        # Departures first: they are sessions we know have events due. A slow scan must not
        # starve them (the scan's finds are only delayed when it is cut short: the watermark
        # waits for a complete pass).
        rechecked = _registration_rechecks_due(state, config)
        departed = [sid for sid in sessions_to_fetch(state, active, ()) if sid not in rechecked]
        _fetch(reader, source, departed, max_fetches)
        if not state.initialized:
            # First tick: the newest finished sessions are history; read them before the
            # (possibly long) discovery pass.
            _scan_pages(reader, state, config, source)
            _discover_pages(reader, state, source, None)
        else:
            _discover_pages(reader, state, source, discovery_pages_per_tick)
            _scan_pages(reader, state, config, source)
        shown = {s.id for s in active} | {s.id for p in obs.pages for s in p.sessions}
        due = [sid for sid in rechecked if sid not in shown]
        _fetch(reader, source, _recheck(reader, state, source, due, recheck_pages), None)
    except _Interrupted:
        pass
    result.fetched_ids = list(obs.fetched)
    return result


class _Reader:
    """Counts requests, checks the budget before each read and turns transient errors into
    an interruption."""

    def __init__(
        self,
        result: Collected,
        out_of_time: Callable[[], bool],
        transient: tuple[type[BaseException], ...],
    ) -> None:
        self.result, self.out_of_time, self.transient = result, out_of_time, transient

    def read(self, what: str, call: Callable[[], T]) -> T:
        if self.out_of_time():
            self.result.interrupted = f"time budget used up while {what}"
            raise _Interrupted
        try:
            value = call()
        except self.transient as exc:
            self.result.interrupted = f"{type(exc).__name__}: {exc}"
            raise _Interrupted from None
        self.result.requests += 1
        return value


def _fetch(
    reader: _Reader, source: SessionSource, ids: Sequence[str], max_fetches: int | None
) -> None:
    fetched = dict(reader.result.observation.fetched)
    try:
        for sid in ids:
            if sid in fetched:
                continue
            if max_fetches is not None and len(fetched) >= max_fetches:
                reader.result.interrupted = f"fetched {len(fetched)} of {len(ids)} sessions"
                raise _Interrupted
            try:
                fetched[sid] = reader.read(
                    f"fetching sessions ({len(fetched)} of {len(ids)} done)",
                    partial(source.get_session, sid),
                )
            except ItemUnreadable:
                reader.result.requests += 1
                reader.result.unreadable.append(sid)
    finally:
        reader.result.observation.fetched = fetched


def _discover_pages(
    reader: _Reader, state: TrackerState, source: SessionSource, max_pages: int | None
) -> None:
    """Continue the discovery pass over the unfiltered list, if one is due."""
    start = discovery_start(state)
    if start is None:
        return
    obs = reader.result.observation
    pages: list[ScannedPage] = []
    after = start.after
    try:
        while max_pages is None or len(pages) < max_pages:
            try:
                sessions, next_after = reader.read(
                    "discovering sessions in unknown statuses",
                    partial(source.list_all_page, after),
                )
            except ListCursorRejected:
                obs.discovery_rejected = True
                break
            pages.append(ScannedPage(after, sessions, next_after))
            if next_after is None:
                obs.discovery_complete = True
                break
            after = next_after
    finally:
        obs.discovery_pages = pages


def _scan_pages(
    reader: _Reader, state: TrackerState, config: TrackerConfig, source: SessionSource
) -> None:
    """Page the finished-session list as planned, gathering evidence of its order."""
    plan = plan_scan(state, config)
    obs = reader.result.observation
    pages: list[ScannedPage] = []
    after, evidence = plan.start.after, plan.start.evidence.copy()
    try:
        while plan.max_pages != 0:
            try:
                sessions, next_after = reader.read(
                    "scanning finished sessions", partial(source.list_terminal_page, after)
                )
            except ListCursorRejected:
                obs.scan_rejected = True
                break
            page = ScannedPage(after, sessions, next_after)
            pages.append(page)
            stop_here = False
            fresh = sessions
            if len(pages) == 1 and plan.start.done_through is not None:
                # A page read again (resumed pass, or an oldest-first tail): only what
                # follows the last item done is new evidence.
                ids = [s.id for s in sessions]
                if plan.start.done_through in ids:
                    fresh = sessions[ids.index(plan.start.done_through) + 1 :]
            for s in fresh:
                ms = to_ms(s.created_at)
                if ms is None:
                    continue
                evidence.see(ms)
                if plan.expect is ListOrder.NEWEST_FIRST and evidence.not_newest_first:
                    obs.order_violation = True
                if plan.expect is ListOrder.OLDEST_FIRST and evidence.not_oldest_first:
                    obs.order_violation = True
                early_stop_allowed = plan.stop_below_ms is not None and not obs.order_violation
                if early_stop_allowed and ms < (plan.stop_below_ms or 0):
                    stop_here = True
            page.evidence = evidence.copy()
            if next_after is None or stop_here:
                obs.scan_complete = True
                break
            if plan.max_pages is not None and len(pages) >= plan.max_pages:
                break
            after = next_after
    finally:
        obs.pages = pages


def _registration_rechecks_due(state: TrackerState, config: TrackerConfig) -> list[str]:
    """Finished sessions that only wait for registrations: they need no fetch unless one of
    their checkpoints changed, which the checkpoint list tells for all of them at once."""
    if not config.tracks_checkpoints:
        return []
    return [sid for sid, entry in state.tracked.items() if entry.lingering]


def _recheck(
    reader: _Reader,
    state: TrackerState,
    source: SessionSource,
    sessions: Sequence[str],
    max_pages: int,
) -> list[str]:
    """Page the newest-first inference-checkpoint list down to the oldest pending checkpoint;
    return the sessions to fetch: those with a checkpoint now registered, and those whose
    checkpoint the list cannot vouch for (not found where it should be, time unknown, the
    list out of order or too long to read)."""
    pending = {
        p.checkpoint_id: (sid, p.created_ms) for sid in sessions for p in state.tracked[sid].pending
    }
    if not pending:
        return []
    known_times = [ms for _, ms in pending.values() if ms is not None]
    need_below = min(known_times) if known_times else None
    listed: dict[str, Checkpoint] = {}
    oldest: int | None = None
    trusted = True
    after: str | None = None
    for _ in range(max_pages if need_below is not None else 0):
        items, after = reader.read(
            "re-checking registrations",
            partial(source.list_inference_checkpoints_page, after),
        )
        for c in items:
            listed[c.id] = c
            ms = to_ms(c.created_at)
            if ms is not None:
                if oldest is not None and ms > oldest:
                    trusted = False  # not newest first after all
                oldest = ms if oldest is None else min(oldest, ms)
        if after is None:
            break
        if need_below is not None and oldest is not None and oldest < need_below:
            break
    due: list[str] = []
    for cid, (sid, _) in pending.items():
        listed_ckpt = listed.get(cid) if trusted else None
        if listed_ckpt is None or listed_ckpt.is_registered:
            # Registered now, or the list cannot vouch for it (not where it should be, time
            # unknown, out of order, or further down than we read): ask the session itself.
            due.append(sid)
    return list(dict.fromkeys(due))
