"""The pure event core: previous state + what the API shows now → events + next state.

No HTTP and no Dagster here, so every rule can be property-tested. The glue (``poll.collect``)
lists the active sessions, fetches by id what ``sessions_to_fetch`` names, pages the lists as
``plan_scan`` / ``TrackerState.discovery`` say, and hands all of it to ``advance``.

How nothing is lost or repeated:

* Sessions that are still moving are *tracked* (in the cursor) until their terminal event is
  out. A tracked session is diffed against each new snapshot: checkpoints that sort after its
  ``mark`` are new; a changed status is an event.
* A session can be born and end between two ticks (a capacity error at creation). Those are
  found in the list of terminal sessions: anything created after ``floor`` (watermark minus a
  look-back) that is neither tracked nor in ``recent_terminal`` is new. With the list newest
  first, one page usually suffices; if the API is seen to break that order, every pass scans
  the whole list (a complete scan is always correct, just dearer).
* A session in a status this library does not know is in neither filtered list. A discovery
  pass over the unfiltered list (at the first tick, and again whenever a new such status is
  seen) adopts every non-terminal session, and the status joins the active-list filter.
* History stays history: a session or checkpoint created before the first tick is never
  announced (unless backfilling), whichever way it is first met.
* The watermark only moves to the newest ``created_at`` seen *before* a scan pass started, and
  only when that pass completed, so a session created during a pass is still above the floor
  on the next one.
* With a cap on events per tick, processing stops at the first event over the cap; state
  records only what was applied, the pass positions stay at the deferred item, and untracked
  sessions seen in the active list are adopted so their events follow on the next tick.
"""

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..api.models import InferenceCheckpoint, TrainingSession
from .events import CHECKPOINT_EVENTS, TERMINAL_EVENT_FOR_STATUS, EventKind, SessionEvent
from .passes import ScannedPage, run_pass
from .state import ListOrder, PendingCheckpoint, ScanPosition, TrackedSession, TrackerState

ALL_EVENT_KINDS = frozenset(EventKind)
#: history sessions a backfill pass remembers having announced (see ``_discover``).
BACKFILL_MEMORY = 200
#: the prefix a status needs to be sent back to the API as a filter value.
STATUS_PREFIX = "TRAINING_SESSION_STATUS_"


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
    #: ticks is then reported within two passes (see README, "List order").
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
    if state.backfilling:
        return ScanPlan(start, None)
    if state.order is ListOrder.NEWEST_FIRST:
        return ScanPlan(start, floor_ms(state, config), expect=ListOrder.NEWEST_FIRST)
    if state.order is ListOrder.OLDEST_FIRST:
        # Follow the tail: new sessions are appended after where the last pass ended.
        return ScanPlan(state.scan or state.tail or start, None, expect=ListOrder.OLDEST_FIRST)
    if state.order is ListOrder.UNORDERED:
        return ScanPlan(start, None, max_pages=config.unordered_pages_per_tick)
    return ScanPlan(start, None)


def discovery_start(state: TrackerState) -> ScanPosition | None:
    """Where the discovery pass over the unfiltered list resumes (None: no pass due)."""
    return ScanPosition() if not state.initialized else state.discovery


def active_filter(state: TrackerState) -> list[str]:
    """Unknown non-terminal statuses to add to the active-list filter (those the API can take)."""
    return [
        s for s in state.extra_active if s.startswith(STATUS_PREFIX) and s not in state.unfilterable
    ]


def sessions_to_fetch(
    state: TrackerState, active: Iterable[TrainingSession], scanned: Iterable[TrainingSession]
) -> list[str]:
    """Tracked sessions that the lists did not show this tick: they must be fetched by id."""
    shown = {s.id for s in active} | {s.id for s in scanned}
    return [sid for sid in state.tracked if sid not in shown]


def is_unknown_live(session: TrainingSession) -> bool:
    """A status that is neither a known active nor a terminal one (e.g. a future PAUSED)."""
    status = session.status
    return not status.is_terminal and not status.is_active


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
    budget: _Budget,
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
                entry.pending.append(_pending(ckpt, now_ms))
                return False
        elif await_registration:
            entry.pending.append(_pending(ckpt, now_ms))
        entry.announce(checkpoint_key(ckpt))
    return True


def _pending(ckpt: InferenceCheckpoint, now_ms: int) -> PendingCheckpoint:
    return PendingCheckpoint(ckpt.id, now_ms, to_ms(ckpt.created_at))


def _history_entry(
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
                entry.pending.append(_pending(c, now_ms))
    return entry


def _adopt(
    session: TrainingSession,
    state: TrackerState,
    config: TrackerConfig,
    now_ms: int,
    first_tick: bool = False,
) -> TrackedSession:
    """The entry for a live session first met this tick: new sessions start empty (every fact
    is an event); ones created before the first tick start from their history."""
    if first_tick:
        return _history_entry(session, config, now_ms, None)
    created = to_ms(session.created_at)
    if not state.backfilling and (created is None or created < state.baseline_ms):
        return _history_entry(session, config, now_ms, state.baseline_ms)
    return TrackedSession()


def _note_unknown_status(state: TrackerState, session: TrainingSession, notes: list[str]) -> None:
    """Remember an unknown live status; a new one starts a discovery pass for its peers."""
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


def _baseline(state: TrackerState, obs: Observation, config: TrackerConfig) -> None:
    """First tick: remember what exists so that history does not become runs (unless backfill)."""
    observed = [
        *obs.active,
        *(s for p in obs.pages for s in p.sessions),
        *(s for p in obs.discovery_pages for s in p.sessions),
    ]
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
        state.tracked[s.id] = _history_entry(s, config, obs.now_ms, None)
    for page in obs.pages:
        for s in page.sessions:
            ms = to_ms(s.created_at)
            if s.id not in state.tracked and ms is not None and ms >= state.baseline_ms:
                state.recent_terminal[s.id] = ms


def advance(state: TrackerState, obs: Observation, config: TrackerConfig) -> TickOutcome:
    """Apply one tick's observation. ``state`` is not modified; the outcome holds a new one."""
    first_tick = not state.initialized
    state = TrackerState.from_cursor(state.to_cursor()) if state.initialized else TrackerState()
    notes: list[str] = []
    if not config.tracks_checkpoints:
        for entry in state.tracked.values():  # e.g. a cursor written by a checkpoint sensor
            entry.pending.clear()
    if first_tick:
        state.discovery = ScanPosition()
        _baseline(state, obs, config)
    for status in obs.unfilterable:
        if status not in state.unfilterable:
            state.unfilterable.append(status)
            notes.append(
                f"the API refuses {status!r} as a status filter; sessions in it are fetched by id"
            )
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
            _note_unknown_status(state, fetched, notes)

    # 1. Sessions that are not terminal whatever their status: the discovery pass adopts them.
    if state.discovery is None and now - state.discovered_ms > config.rediscover_ms:
        state.discovery = ScanPosition()
    _discovery(state, obs, config, budget, notes, first_tick)
    if first_tick and not config.backfill:
        return TickOutcome([], state, notes)

    # 2. Tracked sessions and new sessions in the active list, oldest first.
    if not budget.exhausted:
        _diff_tracked(state, obs, config, budget, snapshot)

    # 3. The terminal-session scan: sessions born and ended between ticks (or history, when
    #    backfilling), positionally resumable.
    ended: ScanPosition | None = None
    if not budget.exhausted:
        ended = _scan(state, obs, budget, floor_ms(state, config), now)

    # 4. Bookkeeping.
    if obs.checkpoint_list_untrusted and not state.checkpoint_list_untrusted:
        state.checkpoint_list_untrusted = True
        notes.append(
            "the checkpoint list is not newest first as documented; registrations are now "
            "re-checked by id and the finished-session list is scanned instead"
        )
    if obs.checkpoints_read_newest_ms is not None and not budget.exhausted:
        state.checkpoint_watermark_ms = max(
            state.checkpoint_watermark_ms, obs.checkpoints_read_newest_ms
        )
    _move_watermark(state, obs, config, snapshot, ended, notes)
    _retire(state, config, snapshot, now, notes)
    return TickOutcome(budget.events, state, notes, deferred=budget.exhausted)


def _diff_tracked(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    budget: _Budget,
    snapshot: Mapping[str, TrainingSession],
) -> None:
    candidates = [snapshot[sid] for sid in state.tracked if sid in snapshot]
    candidates += [s for s in obs.active if s.id not in state.tracked]
    candidates += [
        snapshot[sid] for sid in obs.adopt if sid in snapshot and sid not in state.tracked
    ]
    candidates.sort(key=lambda s: (to_ms(s.created_at) or 0, s.id))
    for i, session in enumerate(candidates):
        if session.id not in state.tracked:
            state.tracked[session.id] = _adopt(session, state, config, obs.now_ms)
        if not _diff_session(state.tracked[session.id], session, obs.now_ms, budget):
            for rest in candidates[i + 1 :]:
                if rest.id not in state.tracked:
                    state.tracked[rest.id] = _adopt(rest, state, config, obs.now_ms)
            return


def _discovery(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    budget: _Budget,
    notes: list[str],
    first_tick: bool,
) -> None:
    """Adopt the non-terminal sessions of the unfiltered list that the filtered lists miss."""
    if state.discovery is None or not (obs.discovery_pages or obs.discovery_complete):
        return

    def handle(session: TrainingSession) -> bool:
        if not is_unknown_live(session):
            return True  # known statuses: the active list and the terminal scan see them
        _note_unknown_status(state, session, notes)
        if session.id in state.tracked:
            return True
        entry = _adopt(session, state, config, obs.now_ms, first_tick and not config.backfill)
        if not _diff_session(entry, session, obs.now_ms, budget):
            if entry.status or entry.mark is not None:
                state.tracked[session.id] = entry  # partly announced: finish it when tracked
                return True
            return False
        state.tracked[session.id] = entry
        return True

    position, stopped = run_pass(state.discovery, obs.discovery_pages, handle)
    if obs.discovery_complete and not stopped:
        state.discovery, state.discovered_ms = None, obs.now_ms
    else:
        state.discovery = position


def _move_watermark(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    snapshot: Mapping[str, TrainingSession],
    ended: ScanPosition | None,
    notes: list[str],
) -> None:
    """The watermark (and the order check) move only when a scan pass completed (``ended``
    is where it ended)."""
    for s in snapshot.values():
        ms = to_ms(s.created_at)
        if ms is not None and ms > state.seen_max_ms:
            state.seen_max_ms = ms
    if obs.scan_rejected:
        notes.append(
            "the API refused the saved position in the finished-session list; a new pass starts"
        )
        state.scan = state.tail = None
        if state.order is ListOrder.OLDEST_FIRST:
            state.order = ListOrder.UNVERIFIED
    if obs.order_violation:
        notes.append(
            f"the finished-session list is not {state.order.value.replace('_', ' ')} after all; "
            "a complete pass checks its order again"
        )
        state.order, state.scan, state.tail = ListOrder.UNVERIFIED, None, None
        return
    if ended is None:
        return
    state.watermark_ms = max(state.watermark_ms, state.pass_start_ms)
    state.pass_start_ms = state.seen_max_ms
    state.backfilling, state.backfilled = False, []
    state.tail = ended
    if state.order is ListOrder.UNVERIFIED:
        state.order, state.verified_ms = ended.evidence.verdict(), obs.now_ms
        if state.order is not ListOrder.NEWEST_FIRST:
            notes.append(f"the finished-session list is {state.order.value.replace('_', ' ')}")
    elif (
        state.order in (ListOrder.NEWEST_FIRST, ListOrder.OLDEST_FIRST)
        and obs.now_ms - state.verified_ms > config.order_recheck_ms
    ):
        # The next pass is complete and checks the order.
        state.order, state.tail = ListOrder.UNVERIFIED, None
    if state.order is not ListOrder.OLDEST_FIRST:
        state.tail = None


def _retire(
    state: TrackerState,
    config: TrackerConfig,
    snapshot: Mapping[str, TrainingSession],
    now: int,
    notes: list[str],
) -> None:
    """Stop waiting for registrations past the deadline; forget sessions that are done."""
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
            # The checkpoint list may show its checkpoints again: remember it by them too.
            newest = max(
                (ms for c in snapshot[sid].inference_checkpoints if (ms := to_ms(c.created_at))),
                default=None,
            )
            if config.checkpoints_only and newest is not None:
                state.recent_checkpoints[sid] = newest
    if not state.backfilling:
        state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    ckpt_floor = max(
        (state.checkpoint_watermark_ms or state.watermark_ms) - config.lookback_ms,
        state.baseline_ms,
    )
    state.recent_checkpoints = {
        k: v for k, v in state.recent_checkpoints.items() if v >= ckpt_floor
    }


def _scan(
    state: TrackerState,
    obs: Observation,
    budget: _Budget,
    floor: int,
    now: int,
) -> ScanPosition | None:
    """Process scanned pages in order; returns where the pass ended if it is complete (the
    last page's ``after`` and its last item: an oldest-first list resumes there)."""
    if obs.scan_rejected:
        return None
    start = state.scan
    if state.scan is None:
        state.pass_start_ms = state.seen_max_ms
        start = state.tail if state.order is ListOrder.OLDEST_FIRST and state.tail else None
    start = start or ScanPosition()
    position, stopped = run_pass(
        start, obs.pages, lambda s: _discover(state, s, budget.config, budget, floor, now)
    )
    if stopped:
        state.scan = position
        return None
    if obs.scan_complete and obs.pages:
        state.scan = None
        last = obs.pages[-1]
        done = last.sessions[-1].id if last.sessions else None
        if done is None and last.after == start.after:
            done = start.done_through
        return ScanPosition(last.after, done, position.evidence)
    state.scan = position if obs.pages else state.scan
    return None


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
    if sid in state.tracked or sid in state.recent_terminal or sid in state.backfilled:
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
    else:
        # History announced by a backfill pass. Sessions that end meanwhile are inserted
        # into the list and can push a done item onto the page the pass resumes on: the
        # newest few are remembered (about two pages' worth) so none is announced twice.
        state.backfilled = [*state.backfilled, sid][-BACKFILL_MEMORY:]
    return True
