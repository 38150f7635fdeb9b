"""The session tracker, :func:`advance`: moving sessions are tracked until their terminal event;
the scan finds those born and ended between ticks, discovery those in unknown statuses."""

from collections.abc import Mapping

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
from .events import ListOrder, Observation, Outcome, SessionEvent, TrackerConfig
from .state import ScanPosition, TrackerState


def floor_ms(state: TrackerState, config: TrackerConfig) -> int:
    """Sessions created before this are known (tracked, announced, or history)."""
    return max(state.watermark_ms - config.lookback_ms, state.baseline_ms)


def checkpoint_floor(state: TrackerState, config: TrackerConfig) -> int:
    """Checkpoints created before this were seen by an earlier complete read."""
    mark = state.checkpoint_watermark_ms or state.watermark_ms
    return max(mark - config.lookback_ms, state.baseline_ms)


def _baseline(state: TrackerState, obs: Observation, config: TrackerConfig) -> None:
    """First tick: remember what exists, so history does not become runs."""
    pages = [*obs.pages, *obs.discovery_pages]
    observed = [*obs.active, *(s for p in pages for s in p.sessions)]
    created = [ms for s in observed if (ms := to_ms(s.created_at)) is not None]
    state.initialized = True
    # History is what the API held when first asked (by its clock, or its newest session).
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
    """``state`` is not modified; the outcome holds a new one."""
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
    for sid in obs.excluded:  # never tracked; a checkpoint sensor remembers it as retired
        if state.tracked.pop(sid, None) is not None:
            notes.append(f"session {sid} no longer matches the sensor's filter; no longer tracked")
        if config.checkpoints_only:
            newest = obs.listed_checkpoint_ms.get(sid, state.checkpoint_watermark_ms)
            state.recent_checkpoints[sid] = max(state.recent_checkpoints.get(sid, 0), newest)
    for sid, fetched in obs.fetched.items():
        if fetched is not None:
            snapshot[sid] = fetched
            note_unknown_status(state, fetched, notes)
        elif state.tracked.pop(sid, None) is not None:
            notes.append(
                f"session {sid} is no longer returned by the API (404); it is no longer tracked"
            )

    # 1. The discovery pass adopts sessions in unknown live statuses.
    if state.discovery is None and now - state.discovered_ms > config.rediscover_ms:
        state.discovery = ScanPosition()
    run_discovery(state, obs, budget, notes, first_tick)
    if first_tick and not config.backfill:
        return Outcome([], state, notes)

    # 2. Tracked and new active sessions, oldest first (past the cap, adopted without events).
    candidates = [snapshot[sid] for sid in state.tracked if sid in snapshot]
    candidates += [s for s in obs.active if s.id not in state.tracked]
    candidates += [snapshot[i] for i in obs.adopt if i in snapshot and i not in state.tracked]
    stopped = False
    for session in sorted(candidates, key=lambda s: (to_ms(s.created_at) or 0, s.id)):
        if session.id not in state.tracked:
            state.tracked[session.id] = adopt(session, state, config, now)
        if not stopped:
            stopped = not diff_session(state.tracked[session.id], session, now, budget)

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

    # 5. Stop waiting for registrations past the deadline; forget sessions that are done.
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
            # Remembered while the scan (or a running backfill) could show it again.
            del state.tracked[sid]
            created = to_ms(snapshot[sid].created_at)
            if created is None or created >= floor or state.backfilling:
                state.recent_terminal[sid] = created if created is not None else state.seen_max_ms
            remember_checkpoints(state, config, snapshot[sid])
    if not state.backfilling:
        state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    low = checkpoint_floor(state, config)
    state.recent_checkpoints = {k: v for k, v in state.recent_checkpoints.items() if v >= low}
    return Outcome(budget.events, state, notes, deferred=budget.exhausted)


def _move_watermark(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    snapshot: Mapping[str, TrainingSession],
    ended: ScanPosition | None,
    notes: list[str],
) -> None:
    """The watermark and the order check move only when a scan pass completed at ``ended``."""
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
    ):  # the next pass is complete and checks the order
        state.order, state.tail = ListOrder.UNVERIFIED, None
    if state.order is not ListOrder.OLDEST_FIRST:
        state.tail = None
