"""The events between what the tracker remembers and a session or list pass. A :class:`Budget`
caps them per tick; a diff it stops leaves the state at exactly what was announced."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..api.clock import to_ms
from ..api.models import InferenceCheckpoint, TrainingSession
from .events import (
    TERMINAL_EVENT_FOR_STATUS,
    EventKind,
    ListOrder,
    Observation,
    ScannedPage,
    SessionEvent,
    TrackerConfig,
)
from .state import PendingCheckpoint, ScanPosition, TrackedSession, TrackerState, short_id


def checkpoint_key(c: InferenceCheckpoint) -> tuple[int, str]:
    """Total order on a session's checkpoints: creation time (or step), then a short id hash."""
    ms = to_ms(c.created_at)
    return (c.step or 0) if ms is None else ms, short_id(c.id)


@dataclass
class Budget:
    """The first wanted event over the cap stops the tick."""

    config: TrackerConfig
    events: list[SessionEvent] = field(default_factory=list)
    exhausted: bool = False

    def admit(self, event: SessionEvent) -> bool:
        if event.kind not in self.config.kinds:
            return True
        cap = self.config.max_events
        if cap is not None and len(self.events) >= cap:
            self.exhausted = True
            return False
        self.events.append(event)
        return True


def diff_session(
    entry: TrackedSession, session: TrainingSession, now_ms: int, budget: Budget, wait: bool = True
) -> bool:
    """Emit events, updating ``entry`` as each is admitted; False if the budget stopped it.
    ``wait=False`` (backfilled history): unregistered checkpoints are not awaited."""
    tracks = budget.config.tracks_checkpoints
    if tracks and not _diff_checkpoints(entry, session, now_ms, budget, wait):
        return False
    if session.raw_status != entry.status:
        status = session.status
        kind = TERMINAL_EVENT_FOR_STATUS.get(status, EventKind.SESSION_STATUS_CHANGED)
        if not budget.admit(SessionEvent(kind, session, previous_status=entry.status or None)):
            return False
        entry.status = session.raw_status
        if status.is_terminal and entry.terminal_ms is None:
            entry.terminal_ms = now_ms
    return True


def _diff_checkpoints(
    entry: TrackedSession, session: TrainingSession, now_ms: int, budget: Budget, wait: bool
) -> bool:
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
        entry.announce(checkpoint_key(ckpt))
        if ckpt.is_registered:
            if not budget.admit(SessionEvent(EventKind.CHECKPOINT_REGISTERED, session, ckpt)):
                entry.pending.append(pending_of(ckpt, now_ms))  # re-checked next tick
                return False
        elif wait:
            entry.pending.append(pending_of(ckpt, now_ms))
    return True


def pending_of(c: InferenceCheckpoint, now: int) -> PendingCheckpoint:
    return PendingCheckpoint(checkpoint_id=c.id, first_seen_ms=now, created_ms=to_ms(c.created_at))


def history_entry(
    session: TrainingSession, config: TrackerConfig, now_ms: int, cutoff_ms: int | None
) -> TrackedSession:
    """A live session older than the first tick: checkpoints before ``cutoff_ms`` (None: all) are
    history, unregistered ones awaited."""
    entry = TrackedSession(status=session.raw_status)
    for c in session.inference_checkpoints if config.tracks_checkpoints else ():
        created = to_ms(c.created_at)
        if cutoff_ms is None or created is None or created < cutoff_ms:
            entry.announce(checkpoint_key(c))
            if not c.is_registered:
                entry.pending.append(pending_of(c, now_ms))
    return entry


def adopt(
    session: TrainingSession, state: TrackerState, config: TrackerConfig, now_ms: int
) -> TrackedSession:
    """A live session first met: empty if new (every fact is an event), else its history."""
    created = to_ms(session.created_at)
    if not state.backfilling and (created is None or created < state.baseline_ms):
        return history_entry(session, config, now_ms, state.baseline_ms)
    return TrackedSession()


def remember_checkpoints(
    state: TrackerState, config: TrackerConfig, session: TrainingSession
) -> None:
    """A checkpoint sensor remembers a done session by its newest checkpoint (still listed)."""
    times = [ms for c in session.inference_checkpoints if (ms := to_ms(c.created_at)) is not None]
    if config.checkpoints_only and times:
        state.recent_checkpoints[session.id] = max(times)


def run_pass(
    position: ScanPosition, pages: Sequence[ScannedPage], handle: Callable[[TrainingSession], bool]
) -> tuple[ScanPosition, bool]:
    """Feed sessions after ``position`` to ``handle`` until False (a cap): (position, stopped)."""
    position = position.model_copy(deep=True)
    for page in pages:
        if page.after != position.after:  # a page from another position: ignored
            continue
        ids = [s.id for s in page.sessions]
        start = ids.index(position.done_through) + 1 if position.done_through in ids else 0
        for session in page.sessions[start:]:
            if not handle(session):
                return position, True
            position.done_through = session.id
        position = ScanPosition.at(page.next_after, page.evidence or position.evidence)
    return position, False


#: history sessions a backfill pass remembers having announced.
BACKFILL_MEMORY = 200


def scan_finished(
    state: TrackerState, obs: Observation, budget: Budget, floor: int, now: int
) -> ScanPosition | None:
    """Where a complete pass ended (its evidence decides the order), else None."""
    if obs.scan_rejected:
        return None
    if state.scan is None:
        state.pass_start_ms = state.seen_max_ms
    tail = state.tail if state.order is ListOrder.OLDEST_FIRST else None
    start = state.scan or tail or ScanPosition()
    position, stopped = run_pass(
        start, obs.pages, lambda s: _discover(state, s, budget, floor, now)
    )
    if stopped:
        state.scan = position
        return None
    if obs.scan_complete and obs.pages:
        state.scan = None
        # The next oldest-first pass resumes after the last item below the next floor (inserts).
        floor_next = max(state.watermark_ms, state.pass_start_ms) - budget.config.lookback_ms
        anchor = None
        for page in obs.pages:
            for s in page.sessions:
                if (ms := to_ms(s.created_at)) is not None and ms < floor_next:
                    anchor = ScanPosition(after=page.after, done_through=s.id, newest_ms=ms)
        state.tail = anchor or state.tail or ScanPosition()
        return position
    state.scan = position if obs.pages else state.scan
    return None


def _discover(
    state: TrackerState, session: TrainingSession, budget: Budget, floor: int, now: int
) -> bool:
    """A scanned finished session, announced unless known; False if capped."""
    sid = session.id
    if sid in state.tracked or sid in state.recent_terminal or sid in state.backfilled:
        return True
    created = to_ms(session.created_at)
    is_history = created is not None and created < state.baseline_ms
    if created is not None and created < floor and not (state.backfilling and is_history):
        return True
    entry = TrackedSession()
    done = diff_session(entry, session, now, budget, wait=not is_history)
    if not done and not entry.status and entry.mark is None:
        return False
    if not done or entry.pending or entry.terminal_ms is None:
        state.tracked[sid] = entry  # still moving, waiting, or partly announced
        return True
    remember_checkpoints(state, budget.config, session)
    if not is_history and created is not None:
        state.recent_terminal[sid] = created
    elif created is None:
        state.recent_terminal[sid] = state.seen_max_ms
    else:  # backfilled history: inserted sessions can push it onto the page a pass resumes on
        state.backfilled = [*state.backfilled, sid][-BACKFILL_MEMORY:]
    return True


def is_unknown_live(session: TrainingSession) -> bool:
    """A status that is neither a known active nor a terminal one (e.g. a future PAUSED)."""
    return not (session.status.is_terminal or session.status.is_active)


def note_unknown_status(state: TrackerState, session: TrainingSession, notes: list[str]) -> None:
    """A new unknown live status starts a discovery pass for its peers."""
    raw = session.raw_status
    if not raw or not is_unknown_live(session) or raw in state.extra_active:
        return
    state.extra_active.append(raw)
    notes.append(
        f"session {session.id} is in status {raw!r}, unknown to this library: watching it as "
        "a live status, and looking for other sessions in it"
    )
    if state.discovery is None:
        state.discovery = ScanPosition()


def run_discovery(
    state: TrackerState, obs: Observation, budget: Budget, notes: list[str], first_tick: bool
) -> None:
    """Adopt the non-terminal sessions of the unfiltered list that the filtered lists miss."""
    if obs.discovery_rejected and state.discovery is not None:
        notes.append("the API refused the saved position in the full list; discovery starts over")
        state.discovery = ScanPosition()
    if state.discovery is None or not (obs.discovery_pages or obs.discovery_complete):
        return

    def handle(session: TrainingSession) -> bool:
        if not is_unknown_live(session):
            return True  # known statuses: the active list and the terminal scan see them
        note_unknown_status(state, session, notes)
        if session.id in state.tracked:
            return True
        config = budget.config
        if first_tick and not config.backfill:  # all of it is history
            entry = history_entry(session, config, obs.now_ms, None)
        else:
            entry = adopt(session, state, config, obs.now_ms)
        done = diff_session(entry, session, obs.now_ms, budget)
        if not done and not entry.status and entry.mark is None:
            return False
        state.tracked[session.id] = entry  # a partly announced one is finished when tracked
        return True

    position, stopped = run_pass(state.discovery, obs.discovery_pages, handle)
    if obs.discovery_complete and not stopped:
        state.discovery, state.discovered_ms = None, obs.now_ms
    else:
        state.discovery = position
