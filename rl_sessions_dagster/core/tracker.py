"""The pure event core: previous state + what the API shows now → events + next state.

No HTTP and no Dagster here, so every rule can be property-tested. The sensor glue lists the
active sessions, pages through terminal sessions as ``plan_scan`` says, fetches by id what
``sessions_to_fetch`` names, and hands all of it to ``advance``.

How nothing is lost or repeated:

* Sessions that are still moving are *tracked* (in the cursor) until their terminal event is
  out. A tracked session is diffed against each new snapshot: checkpoints that sort after its
  ``mark`` are new; a changed status is an event.
* A session can be born and end between two ticks (a capacity error at creation). Those are
  found in the list of terminal sessions: anything created after ``floor`` (watermark minus a
  look-back) that is neither tracked nor in ``recent_terminal`` is new. With the list newest
  first, one page usually suffices; if the API is seen to break that order, every pass scans
  the whole list (a complete scan is always correct, just dearer).
* The watermark only moves to the newest ``created_at`` seen *before* a scan pass started, and
  only when that pass completed, so a session created during a pass is still above the floor
  on the next one.
* With a cap on events per tick, processing stops at the first event over the cap; state
  records only what was applied, the scan position stays at the deferred item, and untracked
  sessions seen in the active list are tracked so their events follow on the next tick.
"""

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..api.models import InferenceCheckpoint, TrainingSession
from .events import TERMINAL_EVENT_FOR_STATUS, EventKind, SessionEvent
from .state import PendingCheckpoint, ScanPosition, TrackedSession, TrackerState

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


@dataclass(frozen=True)
class ScanPlan:
    """How the glue should page the terminal-session list this tick."""

    start: ScanPosition
    #: newest-first mode: stop paging once an item was created before this (epoch ms).
    stop_below_ms: int | None
    #: 1 on a first tick without backfill: the newest finished sessions are remembered as
    #: history (the server clock has one-second resolution), nothing is announced.
    max_pages: int | None = None


@dataclass
class ScannedPage:
    """One page of the terminal-session list, with the ``after`` it was requested with."""

    after: str | None
    sessions: Sequence[TrainingSession]
    next_after: str | None = None
    #: oldest created_at met in the pass up to the end of this page.
    low_ms: int | None = None


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


@dataclass
class TickOutcome:
    events: list[SessionEvent]
    state: TrackerState
    notes: list[str]
    deferred: bool = False


def to_ms(ts: datetime | None) -> int | None:
    return None if ts is None else int(ts.timestamp() * 1000)


def checkpoint_key(c: InferenceCheckpoint) -> tuple[int, str]:
    """Total order on a session's checkpoints: creation time (or step), then a short id hash."""
    primary = to_ms(c.created_at)
    if primary is None:
        primary = c.step or 0
    return primary, hashlib.blake2b(c.id.encode(), digest_size=4).hexdigest()


def floor_ms(state: TrackerState, config: TrackerConfig) -> int:
    """Sessions created before this are known: tracked, already announced, or history."""
    return max(state.watermark_ms - config.lookback_ms, state.baseline_ms)


def plan_scan(state: TrackerState, config: TrackerConfig) -> ScanPlan:
    if not state.initialized:
        if config.backfill:
            return ScanPlan(ScanPosition(), None)
        return ScanPlan(ScanPosition(), None, max_pages=1)
    start = state.scan or ScanPosition()
    if state.backfilling or state.order != "newest_first":
        return ScanPlan(start, None)
    return ScanPlan(start, floor_ms(state, config))


def sessions_to_fetch(
    state: TrackerState, active: Iterable[TrainingSession], scanned: Iterable[TrainingSession]
) -> list[str]:
    """Tracked sessions that the lists did not show this tick: they must be fetched by id."""
    shown = {s.id for s in active} | {s.id for s in scanned}
    return [sid for sid in state.tracked if sid not in shown]


class _Budget:
    """Counts wanted events against the cap; the first one over it stops the tick."""

    def __init__(self, config: TrackerConfig) -> None:
        self.config = config
        self.events: list[SessionEvent] = []
        self.exhausted = False

    def admit(self, event: SessionEvent) -> bool:
        if event.kind not in self.config.kinds:
            return True
        cap = self.config.max_events
        if cap is not None and len(self.events) >= cap:
            self.exhausted = True
            return False
        self.events.append(event)
        return True


def _diff_session(
    entry: TrackedSession,
    session: TrainingSession,
    now_ms: int,
    budget: _Budget,
    await_registration: bool = True,
) -> bool:
    """Emit the events between ``entry`` and ``session``, mutating ``entry`` as each is admitted.

    Returns False when the budget stopped it part-way (entry holds what was applied).
    ``await_registration=False`` (history in a backfill) does not wait for checkpoints that
    are unregistered now: old ones stay that way.
    """
    by_id = {c.id: c for c in session.inference_checkpoints}
    for pending in list(entry.pending):
        ckpt = by_id.get(pending.checkpoint_id)
        if ckpt is not None and ckpt.is_registered:
            if not budget.admit(SessionEvent(EventKind.CHECKPOINT_REGISTERED, session, ckpt)):
                return False
            entry.pending.remove(pending)
    fresh = sorted(
        (c for c in session.inference_checkpoints if entry.is_new(checkpoint_key(c))),
        key=checkpoint_key,
    )
    for ckpt in fresh:
        if not budget.admit(SessionEvent(EventKind.CHECKPOINT_CREATED, session, ckpt)):
            return False
        if ckpt.is_registered:
            if not budget.admit(SessionEvent(EventKind.CHECKPOINT_REGISTERED, session, ckpt)):
                # Announced as created but not yet as registered: re-check it next tick.
                entry.announce(checkpoint_key(ckpt))
                entry.pending.append(PendingCheckpoint(ckpt.id, now_ms))
                return False
        elif await_registration:
            entry.pending.append(PendingCheckpoint(ckpt.id, now_ms))
        entry.announce(checkpoint_key(ckpt))
    if session.raw_status != entry.status:
        status = session.status
        previous = entry.status or None
        kind = TERMINAL_EVENT_FOR_STATUS.get(status, EventKind.SESSION_STATUS_CHANGED)
        if not budget.admit(SessionEvent(kind, session, previous_status=previous)):
            return False
        entry.status = session.raw_status
        if status.is_terminal and entry.terminal_ms is None:
            entry.terminal_ms = now_ms
    return True


def _baseline(state: TrackerState, obs: Observation, config: TrackerConfig) -> None:
    """First tick: remember what exists so that history does not become runs (unless backfill)."""
    observed = [*obs.active, *(s for p in obs.pages for s in p.sessions)]
    created = [ms for s in observed if (ms := to_ms(s.created_at)) is not None]
    state.initialized = True
    # History is what the API held when we first asked: the server's clock says when that
    # was; the newest session seen guards against a server clock behind its own data.
    server_now = obs.server_now_ms if obs.server_now_ms is not None else obs.now_ms
    state.baseline_ms = max([*created, server_now])
    state.watermark_ms = state.seen_max_ms = state.pass_start_ms = state.baseline_ms
    state.backfilling = config.backfill
    if config.backfill:
        return
    for s in obs.active:
        entry = state.tracked[s.id] = TrackedSession(status=s.raw_status)
        for c in s.inference_checkpoints:
            entry.announce(checkpoint_key(c))
            if not c.is_registered:
                entry.pending.append(PendingCheckpoint(c.id, obs.now_ms))
    for page in obs.pages:
        for s in page.sessions:
            ms = to_ms(s.created_at)
            if s.id not in state.tracked and ms is not None and ms >= state.baseline_ms:
                state.recent_terminal[s.id] = ms


def advance(state: TrackerState, obs: Observation, config: TrackerConfig) -> TickOutcome:
    """Apply one tick's observation. ``state`` is not modified; the outcome holds a new one."""
    state = TrackerState.from_cursor(state.to_cursor()) if state.initialized else TrackerState()
    notes: list[str] = []
    if not state.initialized:
        _baseline(state, obs, config)
        if not config.backfill:
            return TickOutcome([], state, notes)
    budget = _Budget(config)
    now = obs.now_ms
    snapshot: dict[str, TrainingSession] = {s.id: s for s in obs.active}
    for page in obs.pages:
        for s in page.sessions:
            snapshot.setdefault(s.id, s)
    for sid, fetched in obs.fetched.items():
        if fetched is None:
            if state.tracked.pop(sid, None) is not None:
                notes.append(
                    f"session {sid} is no longer returned by the API (404); it is no longer tracked"
                )
        else:
            snapshot[sid] = fetched

    # 1. Tracked sessions and new sessions in the active list, oldest first.
    candidates = [snapshot[sid] for sid in state.tracked if sid in snapshot]
    candidates += [s for s in obs.active if s.id not in state.tracked]
    candidates.sort(key=lambda s: (to_ms(s.created_at) or 0, s.id))
    for i, session in enumerate(candidates):
        entry = state.tracked.setdefault(session.id, TrackedSession())
        if not _diff_session(entry, session, now, budget):
            for rest in candidates[i + 1 :]:
                state.tracked.setdefault(rest.id, TrackedSession())
            break

    # 2. The terminal-session scan: sessions born and ended between ticks (or history, when
    #    backfilling), positionally resumable.
    floor = floor_ms(state, config)
    pass_done = False
    if not budget.exhausted and state.initialized:
        pass_done = _scan(state, obs, config, budget, floor, now)

    # 3. Bookkeeping: watermark, linger, pruning.
    for s in snapshot.values():
        ms = to_ms(s.created_at)
        if ms is not None and ms > state.seen_max_ms:
            state.seen_max_ms = ms
    if obs.order_violation and state.order != "unordered":
        state.order = "unordered"
        notes.append("the session list is not newest first; every pass now scans it whole")
    if pass_done:
        state.watermark_ms = max(state.watermark_ms, state.pass_start_ms)
        state.pass_start_ms = state.seen_max_ms
        state.backfilling = False
        if state.order == "unverified":
            state.order, state.verified_ms = "newest_first", now
        elif state.order == "newest_first" and now - state.verified_ms > config.order_recheck_ms:
            state.order = "unverified"  # the next pass is complete and checks the order again
    floor = floor_ms(state, config)
    for sid, entry in list(state.tracked.items()):
        expired = [p for p in entry.pending if now - p.first_seen_ms > config.registration_wait_ms]
        for p in expired:
            notes.append(
                f"checkpoint {p.checkpoint_id} of session {sid} was not registered "
                f"within {config.registration_wait_ms // 1000} s; no longer waiting"
            )
            entry.pending.remove(p)
        if entry.terminal_ms is not None and not entry.pending and sid in snapshot:
            # Only retire a session seen this tick: its created_at decides whether the
            # terminal scan could show it again, so it must be remembered in recent_terminal.
            del state.tracked[sid]
            created = to_ms(snapshot[sid].created_at)
            # While a backfill pass runs, it may still meet this session: remember it.
            if created is None or created >= floor or state.backfilling:
                state.recent_terminal[sid] = created if created is not None else state.seen_max_ms
    if not state.backfilling:
        state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    return TickOutcome(budget.events, state, notes, deferred=budget.exhausted)


def _scan(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    budget: _Budget,
    floor: int,
    now: int,
) -> bool:
    """Process scanned pages in order; returns True when the pass is complete."""
    if state.scan is None:
        state.pass_start_ms = state.seen_max_ms
    position = state.scan or ScanPosition()
    for page in obs.pages:
        if page.after != position.after:
            continue  # a page from a different position (should not happen); ignore it
        ids = [s.id for s in page.sessions]
        start = ids.index(position.done_through) + 1 if position.done_through in ids else 0
        for session in page.sessions[start:]:
            if not _discover(state, session, config, budget, floor, now):
                state.scan = position
                return False
            position.done_through = session.id
        position = ScanPosition(page.next_after, None, page.low_ms)
    if obs.scan_complete:
        state.scan = None
        return True
    state.scan = position if obs.pages else state.scan
    return False


def _discover(
    state: TrackerState,
    session: TrainingSession,
    config: TrackerConfig,
    budget: _Budget,
    floor: int,
    now: int,
) -> bool:
    """One session from the terminal scan: announce it unless known. False if capped."""
    sid = session.id
    if sid in state.tracked or sid in state.recent_terminal:
        return True
    created = to_ms(session.created_at)
    is_history = created is not None and created < state.baseline_ms
    if created is not None and created < floor and not (state.backfilling and is_history):
        return True
    entry = TrackedSession()
    if not _diff_session(entry, session, now, budget, await_registration=not is_history):
        if entry.status or entry.mark is not None:
            state.tracked[sid] = entry  # partly announced: finish it as a tracked session
            return True
        return False
    if entry.pending or entry.terminal_ms is None:
        state.tracked[sid] = entry
    elif not is_history and created is not None:
        state.recent_terminal[sid] = created
    elif created is None:
        state.recent_terminal[sid] = state.seen_max_ms
    return True
