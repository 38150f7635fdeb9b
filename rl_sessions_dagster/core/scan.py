"""The scan of the finished-session list: sessions born and ended between two ticks.

Its order is undocumented, so a complete pass checks it: newest first lets a pass stop at the
floor (watermark minus look-back), oldest first lets it follow the tail, and no time order
bounds the pages read per tick. The watermark moves only when a pass completes.
"""

from collections.abc import Mapping, Sequence

from ..api.clock import to_ms
from ..api.models import TrainingSession
from .diff import Budget, diff_session, remember_checkpoints
from .list_order import ListOrder, OrderEvidence
from .list_pass import ScannedPage, run_pass
from .state import ScanPosition, TrackedSession, TrackerState
from .tracker_io import Observation, ScanPlan, TrackerConfig

#: history sessions a backfill pass remembers having announced (see ``_discover``).
BACKFILL_MEMORY = 200


def floor_ms(state: TrackerState, config: TrackerConfig) -> int:
    """Sessions created before this are known: tracked, already announced, or history."""
    return max(state.watermark_ms - config.lookback_ms, state.baseline_ms)


def checkpoint_floor(state: TrackerState, config: TrackerConfig) -> int:
    """Checkpoints created before this were seen by an earlier complete read of the checkpoint
    list (or are history)."""
    mark = state.checkpoint_watermark_ms or state.watermark_ms
    return max(mark - config.lookback_ms, state.baseline_ms)


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


def scan_finished(
    state: TrackerState,
    obs: Observation,
    budget: Budget,
    floor: int,
    now: int,
) -> ScanPosition | None:
    """Process scanned pages in order; returns where the pass ended if it is complete (its
    order evidence decides an unverified order); an oldest-first list's tail is kept."""
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
        threshold = max(state.watermark_ms, state.pass_start_ms) - budget.config.lookback_ms
        state.tail = _tail_anchor(obs.pages, threshold) or state.tail or ScanPosition()
        return position
    state.scan = position if obs.pages else state.scan
    return None


def _tail_anchor(pages: Sequence[ScannedPage], threshold_ms: int) -> ScanPosition | None:
    """Where the next pass over an oldest-first list resumes: after the last item created
    before ``threshold_ms`` (the floor the watermark moves to). Sessions inserted later at
    their creation time — created before a tick, ended after it — are then still met, as the
    look-back covers them in a newest-first list."""
    anchor: ScanPosition | None = None
    for page in pages:
        for s in page.sessions:
            ms = to_ms(s.created_at)
            if ms is not None and ms < threshold_ms:
                anchor = ScanPosition(
                    after=page.after, done_through=s.id, evidence=OrderEvidence(newest_ms=ms)
                )
    return anchor


def _discover(
    state: TrackerState,
    session: TrainingSession,
    config: TrackerConfig,
    budget: Budget,
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
    if not diff_session(entry, session, now, budget, await_registration=not is_history):
        if entry.status or entry.mark is not None:
            state.tracked[sid] = entry  # partly announced: finish it as a tracked session
            return True
        return False
    if entry.pending or entry.terminal_ms is None:
        state.tracked[sid] = entry
        return True
    remember_checkpoints(state, config, session)
    if not is_history and created is not None:
        state.recent_terminal[sid] = created
    elif created is None:
        state.recent_terminal[sid] = state.seen_max_ms
    else:
        # History announced by a backfill pass. Sessions that end meanwhile are inserted
        # into the list and can push a done item onto the page the pass resumes on: the
        # newest few are remembered (about two pages' worth) so none is announced twice.
        state.backfilled = [*state.backfilled, sid][-BACKFILL_MEMORY:]
    return True


def move_watermark(
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
