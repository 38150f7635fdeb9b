"""The tracker's passes over the API's lists, as pure functions of state and what was read.

* **The finished-session scan** finds sessions born and ended between two ticks. The list's
  order is undocumented, so a complete pass checks it: newest first lets a pass stop at the
  floor (watermark minus look-back), oldest first lets it follow the tail, and no time order
  bounds the pages read per tick. The watermark moves only when a pass completes.
* **The discovery pass** over the unfiltered list adopts sessions in statuses this library does
  not know (API drift): at the first tick, whenever a new unknown status is seen, and every few
  hours; the status then joins the active-list filter.
* **The checkpoint list** (documented newest first) re-checks pending registrations of finished
  sessions in one page, and lets a checkpoint-only sensor find sessions born between ticks
  without the scan. If it is ever seen out of order it is not trusted again.

Passes are positional and resumable: a position names the page and the last item done on it,
never a count, so items inserted meanwhile neither repeat nor vanish.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..api.clock import to_ms
from ..api.models import TrainingSession
from .diff import Budget, adopt, diff_session, remember_checkpoints
from .observation import CheckpointRead, Observation, ScannedPage, ScanPlan, TrackerConfig
from .state import ListOrder, OrderEvidence, ScanPosition, TrackedSession, TrackerState


def run_pass(
    position: ScanPosition,
    pages: Sequence[ScannedPage],
    handle: Callable[[TrainingSession], bool],
) -> tuple[ScanPosition, bool]:
    """Feed the pages' sessions after ``position`` to ``handle`` in list order.

    ``handle`` returns False when it could not take the session (a cap): the pass stops there
    and the returned position points at that session. Returns (new position, stopped early).
    """
    position = ScanPosition(
        after=position.after,
        done_through=position.done_through,
        evidence=position.evidence.copy(),
    )
    for page in pages:
        if page.after != position.after:
            continue  # a page from a different position (should not happen); ignore it
        ids = [s.id for s in page.sessions]
        start = ids.index(position.done_through) + 1 if position.done_through in ids else 0
        for session in page.sessions[start:]:
            if not handle(session):
                return position, True
            position.done_through = session.id
        evidence = page.evidence.copy() if page.evidence else position.evidence
        position = ScanPosition(after=page.next_after, evidence=evidence)
    return position, False


def checkpoint_mode(state: TrackerState, config: TrackerConfig) -> bool:
    """Whether this tick finds new checkpoints through the checkpoint list."""
    return (
        config.checkpoints_only
        and state.initialized
        and not state.backfilling
        and not state.checkpoint_list_untrusted
    )


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
    """Sessions to fetch among those waiting for registrations: a checkpoint of theirs is
    registered now, or the read cannot vouch for it (not listed where it should be, time
    unknown, list out of order, or further down than was read)."""
    listed = read.by_id if read is not None and read.trusted else {}
    due: list[str] = []
    for sid in sessions:
        for p in state.tracked[sid].pending:
            c = listed.get(p.checkpoint_id)
            if c is None or c.is_registered:
                due.append(sid)
                break
    return due


def sessions_with_new_checkpoints(
    state: TrackerState, read: CheckpointRead, floor_ms: int, shown: set[str]
) -> list[str]:
    """Sessions the tracker does not follow that have a checkpoint newer than the floor: born
    (and perhaps ended) since the last tick. They are fetched and adopted."""
    found: list[str] = []
    for c in read.items:
        sid = c.session_id
        ms = to_ms(c.created_at)
        if sid is None or ms is None or ms < floor_ms or ms < state.baseline_ms:
            continue
        if sid in shown or sid in state.tracked or sid in state.recent_checkpoints:
            continue
        found.append(sid)
    return list(dict.fromkeys(found))


def newest_listed(read: CheckpointRead, sessions: set[str]) -> dict[str, int]:
    """The newest listed checkpoint of each of ``sessions``: a session remembered in
    ``recent_checkpoints`` (retired, or outside the filter) that still produces checkpoints
    stays remembered, so the list never makes it fetched again."""
    newest: dict[str, int] = {}
    for c in read.items:
        sid, ms = c.session_id, to_ms(c.created_at)
        if sid in sessions and ms is not None:
            newest[sid] = max(ms, newest.get(sid, ms))
    return newest


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


#: the prefix a status needs to be sent back to the API as a filter value.
STATUS_PREFIX = "TRAINING_SESSION_STATUS_"


def discovery_start(state: TrackerState) -> ScanPosition | None:
    """Where the discovery pass over the unfiltered list resumes (None: no pass due)."""
    return ScanPosition() if not state.initialized else state.discovery


def active_filter(state: TrackerState) -> list[str]:
    """Unknown non-terminal statuses to add to the active-list filter (those the API can take)."""
    return [
        s for s in state.extra_active if s.startswith(STATUS_PREFIX) and s not in state.unfilterable
    ]


def is_unknown_live(session: TrainingSession) -> bool:
    """A status that is neither a known active nor a terminal one (e.g. a future PAUSED)."""
    status = session.status
    return not status.is_terminal and not status.is_active


def note_unknown_status(state: TrackerState, session: TrainingSession, notes: list[str]) -> None:
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


def run_discovery(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    budget: Budget,
    notes: list[str],
    first_tick: bool,
) -> None:
    """Adopt the non-terminal sessions of the unfiltered list that the filtered lists miss."""
    if state.discovery is None or not (obs.discovery_pages or obs.discovery_complete):
        return

    def handle(session: TrainingSession) -> bool:
        if not is_unknown_live(session):
            return True  # known statuses: the active list and the terminal scan see them
        note_unknown_status(state, session, notes)
        if session.id in state.tracked:
            return True
        entry = adopt(session, state, config, obs.now_ms, first_tick and not config.backfill)
        if not diff_session(entry, session, obs.now_ms, budget):
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
