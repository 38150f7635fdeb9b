"""The session tracker (:func:`advance`: previous state + what the API shows → events + next
state) and what a tick reads. Moving sessions are tracked until their terminal event is out; the
scan finds those born and ended between ticks, the discovery pass those in unknown statuses;
history is never announced unless backfilling; the watermark moves when a scan pass completes."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..api.clock import to_ms
from ..api.models import TrainingSession
from .diff import (
    Budget,
    adopt,
    diff_session,
    history_entry,
    note_unknown_status,
    remember_checkpoints,
    run_discovery,
    scan_finished,
)
from .events import CheckpointRead, ListOrder, Observation, Outcome, SessionEvent, TrackerConfig
from .state import PendingCheckpoint, ScanPosition, TrackerState


@dataclass(frozen=True)
class ScanPlan:
    """How to page the finished-session list this tick."""

    start: ScanPosition
    #: newest first: stop once an item was created before this.
    stop_below_ms: int | None
    #: 1 on a first tick without backfill (the newest page is history: the server clock has
    #: one-second resolution), ``unordered_pages_per_tick`` when unordered.
    max_pages: int | None = None
    #: the order the pass relies on (a violation sends the tracker back to verifying).
    expect: ListOrder = ListOrder.UNVERIFIED


def floor_ms(state: TrackerState, config: TrackerConfig) -> int:
    """Sessions created before this are known: tracked, already announced, or history."""
    return max(state.watermark_ms - config.lookback_ms, state.baseline_ms)


def checkpoint_floor(state: TrackerState, config: TrackerConfig) -> int:
    """Checkpoints created before this were seen by an earlier complete read (or are history)."""
    mark = state.checkpoint_watermark_ms or state.watermark_ms
    return max(mark - config.lookback_ms, state.baseline_ms)


def plan_scan(state: TrackerState, config: TrackerConfig) -> ScanPlan:
    if not state.initialized:
        return ScanPlan(ScanPosition(), None, max_pages=None if config.backfill else 1)
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


def oldest_pending_ms(state: TrackerState, sessions: Iterable[str]) -> int | None:
    times = [
        p.created_ms
        for sid in sessions
        for p in state.tracked[sid].pending
        if p.created_ms is not None
    ]
    return min(times) if times else None


def registration_fetches(
    state: TrackerState, sessions: Sequence[str], read: CheckpointRead | None
) -> list[str]:
    """Those of ``sessions`` (waiting for registrations) with a checkpoint registered now, or
    one the read cannot vouch for (not listed, time unknown, list out of order, not read)."""
    listed = read.by_id if read is not None and read.trusted else {}

    def vouched(p: PendingCheckpoint) -> bool:
        c = listed.get(p.checkpoint_id)
        return c is not None and not c.is_registered

    return [sid for sid in sessions if not all(vouched(p) for p in state.tracked[sid].pending)]


def sessions_with_new_checkpoints(
    state: TrackerState, read: CheckpointRead, floor_ms: int, shown: set[str]
) -> list[str]:
    """Sessions not followed with a checkpoint above the floor: born since the last tick (and
    perhaps ended), to fetch and adopt."""
    found: dict[str, None] = {}
    for c in read.items:
        sid, ms = c.session_id, to_ms(c.created_at)
        if sid is None or ms is None or ms < max(floor_ms, state.baseline_ms):
            continue
        if sid not in shown and sid not in state.tracked and sid not in state.recent_checkpoints:
            found[sid] = None
    return list(found)


def newest_listed(read: CheckpointRead, sessions: set[str]) -> dict[str, int]:
    """The newest listed checkpoint of each of ``sessions``: a remembered session (retired, or
    outside the filter) that still produces checkpoints stays remembered, never fetched again."""
    newest: dict[str, int] = {}
    for c in read.items:
        sid, ms = c.session_id, to_ms(c.created_at)
        if sid in sessions and ms is not None:
            newest[sid] = max(ms, newest.get(sid, ms))
    return newest


def active_filter(state: TrackerState) -> list[str]:
    """Unknown live statuses to add to the active-list filter (only full constants can be sent)."""
    prefix = "TRAINING_SESSION_STATUS_"
    return [s for s in state.extra_active if s.startswith(prefix) and s not in state.unfilterable]


def _baseline(state: TrackerState, obs: Observation, config: TrackerConfig) -> None:
    """First tick: remember what exists, so history does not become runs (unless backfill)."""
    pages = [*obs.pages, *obs.discovery_pages]
    observed = [*obs.active, *(s for p in pages for s in p.sessions)]
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
        state.tracked[s.id] = history_entry(s, config, obs.now_ms, None)
    for page in obs.pages:
        for s in page.sessions:
            ms = to_ms(s.created_at)
            if s.id not in state.tracked and ms is not None and ms >= state.baseline_ms:
                state.recent_terminal[s.id] = ms


def advance(
    state: TrackerState, obs: Observation, config: TrackerConfig
) -> Outcome[SessionEvent, TrackerState]:
    """Apply one tick's observation. ``state`` is not modified; the outcome holds a new one."""
    first_tick = not state.initialized
    state = state.model_copy(deep=True) if state.initialized else TrackerState()
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
    budget = Budget(config)
    now = obs.now_ms
    snapshot: dict[str, TrainingSession] = {s.id: s for s in obs.active}
    for page in obs.pages:
        for s in page.sessions:
            snapshot.setdefault(s.id, s)
    for sid in obs.excluded:
        _exclude(state, config, sid, obs, notes)
    for sid, fetched in obs.fetched.items():
        if fetched is None:
            if state.tracked.pop(sid, None) is not None:
                notes.append(
                    f"session {sid} is no longer returned by the API (404); it is no longer tracked"
                )
        else:
            snapshot[sid] = fetched
            note_unknown_status(state, fetched, notes)

    # 1. Sessions that are not terminal whatever their status: the discovery pass adopts them.
    if state.discovery is None and now - state.discovered_ms > config.rediscover_ms:
        state.discovery = ScanPosition()
    run_discovery(state, obs, budget, notes, first_tick)
    if first_tick and not config.backfill:
        return Outcome([], state, notes)

    # 2. Tracked sessions and new ones of the active list, oldest first. With the cap reached,
    #    the rest are adopted without events, so they are not lost if they leave that list.
    _diff_tracked(state, obs, budget, snapshot)

    # 3. The finished-session scan: sessions born and ended between ticks (or backfilled).
    ended: ScanPosition | None = None
    if not budget.exhausted:
        ended = scan_finished(state, obs, budget, floor_ms(state, config), now)

    # 4. Bookkeeping.
    if obs.checkpoint_list_untrusted and not state.checkpoint_list_untrusted:
        state.checkpoint_list_untrusted = True
        notes.append(
            "the checkpoint list is not newest first as documented; registrations are now "
            "re-checked by id and the finished-session list is scanned instead"
        )
    for sid, ms in obs.listed_checkpoint_ms.items():
        if sid in state.recent_checkpoints:
            state.recent_checkpoints[sid] = max(state.recent_checkpoints[sid], ms)
    if obs.checkpoints_read_newest_ms is not None and not budget.exhausted:
        state.checkpoint_watermark_ms = max(
            state.checkpoint_watermark_ms, obs.checkpoints_read_newest_ms
        )
    _move_watermark(state, obs, config, snapshot, ended, notes)
    _retire(state, config, snapshot, now, notes)
    return Outcome(budget.events, state, notes, deferred=budget.exhausted)


def _exclude(
    state: TrackerState, config: TrackerConfig, sid: str, obs: Observation, notes: list[str]
) -> None:
    """Never tracked; a checkpoint sensor remembers it as retired (the list never refetches it)."""
    if state.tracked.pop(sid, None) is not None:
        notes.append(f"session {sid} no longer matches the sensor's filter; no longer tracked")
    if config.checkpoints_only:
        newest = obs.listed_checkpoint_ms.get(sid, state.checkpoint_watermark_ms)
        state.recent_checkpoints[sid] = max(state.recent_checkpoints.get(sid, 0), newest)


def _diff_tracked(
    state: TrackerState, obs: Observation, budget: Budget, snapshot: Mapping[str, TrainingSession]
) -> None:
    config = budget.config
    candidates = [snapshot[sid] for sid in state.tracked if sid in snapshot]
    candidates += [s for s in obs.active if s.id not in state.tracked]
    candidates += [
        snapshot[sid] for sid in obs.adopt if sid in snapshot and sid not in state.tracked
    ]
    candidates.sort(key=lambda s: (to_ms(s.created_at) or 0, s.id))
    stopped = False
    for session in candidates:  # once the cap stops the diffs, the rest are only adopted
        if session.id not in state.tracked:
            state.tracked[session.id] = adopt(session, state, config, obs.now_ms)
        if not stopped:
            stopped = not diff_session(state.tracked[session.id], session, obs.now_ms, budget)


def _move_watermark(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    snapshot: Mapping[str, TrainingSession],
    ended: ScanPosition | None,
    notes: list[str],
) -> None:
    """The watermark (and the order check) move only when a scan pass completed at ``ended``."""
    created = [ms for s in snapshot.values() if (ms := to_ms(s.created_at)) is not None]
    state.seen_max_ms = max([state.seen_max_ms, *created])
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
    if state.order is ListOrder.UNVERIFIED:
        state.order, state.verified_ms = ended.evidence.verdict(), obs.now_ms
        if state.order in (ListOrder.OLDEST_FIRST, ListOrder.UNORDERED):
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
            # Only a session seen this tick: its created_at decides whether the scan could show
            # it again (then it is remembered in recent_terminal).
            del state.tracked[sid]
            created = to_ms(snapshot[sid].created_at)
            # While a backfill pass runs, it may still meet this session: remember it.
            if created is None or created >= floor or state.backfilling:
                state.recent_terminal[sid] = created if created is not None else state.seen_max_ms
            remember_checkpoints(state, config, snapshot[sid])
    if not state.backfilling:
        state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    low = checkpoint_floor(state, config)
    state.recent_checkpoints = {k: v for k, v in state.recent_checkpoints.items() if v >= low}
