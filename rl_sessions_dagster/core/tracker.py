"""The pure event core: previous state + what the API shows now → events + next state.

No HTTP and no Dagster here, so every rule can be property-tested. The glue (``reading.collect``)
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

from collections.abc import Iterable, Mapping

from ..api.clock import to_ms
from ..api.models import TrainingSession
from .diff import Budget, adopt, diff_session, history_entry, remember_checkpoints
from .observation import Observation, TickOutcome, TrackerConfig
from .passes import (
    checkpoint_floor,
    floor_ms,
    move_watermark,
    note_unknown_status,
    run_discovery,
    scan_finished,
)
from .state import ScanPosition, TrackerState


def sessions_to_fetch(
    state: TrackerState, active: Iterable[TrainingSession], scanned: Iterable[TrainingSession]
) -> list[str]:
    """Tracked sessions that the lists did not show this tick: they must be fetched by id."""
    shown = {s.id for s in active} | {s.id for s in scanned}
    return [sid for sid in state.tracked if sid not in shown]


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
        state.tracked[s.id] = history_entry(s, config, obs.now_ms, None)
    for page in obs.pages:
        for s in page.sessions:
            ms = to_ms(s.created_at)
            if s.id not in state.tracked and ms is not None and ms >= state.baseline_ms:
                state.recent_terminal[s.id] = ms


def advance(state: TrackerState, obs: Observation, config: TrackerConfig) -> TickOutcome:
    """Apply one tick's observation. ``state`` is not modified; the outcome holds a new one."""
    first_tick = not state.initialized
    state = state.fork() if state.initialized else TrackerState()
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
    run_discovery(state, obs, config, budget, notes, first_tick)
    if first_tick and not config.backfill:
        return TickOutcome([], state, notes)

    # 2. Tracked sessions and new sessions in the active list, oldest first.
    #    Even with the cap already reached: untracked sessions of the active list are then
    #    adopted without events, so they are not lost if they leave that list.
    _diff_tracked(state, obs, config, budget, snapshot)

    # 3. The terminal-session scan: sessions born and ended between ticks (or history, when
    #    backfilling), positionally resumable.
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
    move_watermark(state, obs, config, snapshot, ended, notes)
    _retire(state, config, snapshot, now, notes)
    return TickOutcome(budget.events, state, notes, deferred=budget.exhausted)


def _exclude(
    state: TrackerState, config: TrackerConfig, sid: str, obs: Observation, notes: list[str]
) -> None:
    """A session the filter excludes is never tracked; a checkpoint sensor remembers it like a
    retired one, so the checkpoint list does not make it fetched again."""
    if state.tracked.pop(sid, None) is not None:
        notes.append(f"session {sid} no longer matches the sensor's filter; no longer tracked")
    if config.checkpoints_only:
        newest = obs.listed_checkpoint_ms.get(sid, state.checkpoint_watermark_ms)
        state.recent_checkpoints[sid] = max(state.recent_checkpoints.get(sid, 0), newest)


def _diff_tracked(
    state: TrackerState,
    obs: Observation,
    config: TrackerConfig,
    budget: Budget,
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
            state.tracked[session.id] = adopt(session, state, config, obs.now_ms)
        if not diff_session(state.tracked[session.id], session, obs.now_ms, budget):
            for rest in candidates[i + 1 :]:
                if rest.id not in state.tracked:
                    state.tracked[rest.id] = adopt(rest, state, config, obs.now_ms)
            return


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
            remember_checkpoints(state, config, snapshot[sid])
    if not state.backfilling:
        state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    ckpt_floor = checkpoint_floor(state, config)
    state.recent_checkpoints = {
        k: v for k, v in state.recent_checkpoints.items() if v >= ckpt_floor
    }
