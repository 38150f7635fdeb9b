"""One session against what the tracker remembers of it: the events between the two.

Every event goes through a :class:`Budget` (the cap on runs per tick); when the cap stops a
diff part-way, the entry holds exactly what was announced, so the rest follows next tick.
"""

from ..api.clock import to_ms
from ..api.models import InferenceCheckpoint, TrainingSession
from .events import TERMINAL_EVENT_FOR_STATUS, EventKind, SessionEvent
from .observation import TrackerConfig, checkpoint_key
from .state import PendingCheckpoint, TrackedSession, TrackerState


class Budget:
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


def diff_session(
    entry: TrackedSession,
    session: TrainingSession,
    now_ms: int,
    budget: Budget,
    await_registration: bool = True,
) -> bool:
    """Emit the events between ``entry`` and ``session``, mutating ``entry`` as each is admitted.

    Returns False when the budget stopped it part-way (entry holds what was applied).
    ``await_registration=False`` (history in a backfill) does not wait for checkpoints that
    are unregistered now: old ones stay that way.
    """
    if budget.config.tracks_checkpoints and not _diff_checkpoints(
        entry, session, now_ms, budget, await_registration
    ):
        return False
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


def _diff_checkpoints(
    entry: TrackedSession,
    session: TrainingSession,
    now_ms: int,
    budget: Budget,
    await_registration: bool,
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
        if ckpt.is_registered:
            if not budget.admit(SessionEvent(EventKind.CHECKPOINT_REGISTERED, session, ckpt)):
                # Announced as created but not yet as registered: re-check it next tick.
                entry.announce(checkpoint_key(ckpt))
                entry.pending.append(pending_of(ckpt, now_ms))
                return False
        elif await_registration:
            entry.pending.append(pending_of(ckpt, now_ms))
        entry.announce(checkpoint_key(ckpt))
    return True


def pending_of(ckpt: InferenceCheckpoint, now_ms: int) -> PendingCheckpoint:
    return PendingCheckpoint(
        checkpoint_id=ckpt.id, first_seen_ms=now_ms, created_ms=to_ms(ckpt.created_at)
    )


def history_entry(
    session: TrainingSession, config: TrackerConfig, now_ms: int, cutoff_ms: int | None
) -> TrackedSession:
    """A live session first met now although it existed before the first tick: its status
    and its checkpoints created before ``cutoff_ms`` (all of them when None: what the first
    tick sees is history) are remembered, never announced. Unregistered ones are awaited,
    since their registration would happen after the first tick."""
    entry = TrackedSession(status=session.raw_status)
    if not config.tracks_checkpoints:
        return entry
    for c in session.inference_checkpoints:
        created = to_ms(c.created_at)
        if cutoff_ms is None or created is None or created < cutoff_ms:
            entry.announce(checkpoint_key(c))
            if not c.is_registered:
                entry.pending.append(pending_of(c, now_ms))
    return entry


def adopt(
    session: TrainingSession,
    state: TrackerState,
    config: TrackerConfig,
    now_ms: int,
    first_tick: bool = False,
) -> TrackedSession:
    """The entry for a live session first met this tick: new sessions start empty (every fact
    is an event); ones created before the first tick start from their history."""
    if first_tick:
        return history_entry(session, config, now_ms, None)
    created = to_ms(session.created_at)
    if not state.backfilling and (created is None or created < state.baseline_ms):
        return history_entry(session, config, now_ms, state.baseline_ms)
    return TrackedSession()


def remember_checkpoints(
    state: TrackerState, config: TrackerConfig, session: TrainingSession
) -> None:
    """A session that is done: the checkpoint list may still show its checkpoints, so a
    checkpoint sensor remembers it by its newest one (forgotten below the checkpoint floor)."""
    if not config.checkpoints_only:
        return
    newest = max(
        (ms for c in session.inference_checkpoints if (ms := to_ms(c.created_at)) is not None),
        default=None,
    )
    if newest is not None:
        state.recent_checkpoints[session.id] = newest
