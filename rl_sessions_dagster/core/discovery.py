"""Sessions in statuses this library does not know (API drift).

Such a session is in neither the active nor the finished filtered list. A discovery pass over
the unfiltered list (at the first tick, whenever a new unknown status is seen, and every few
hours) adopts every non-terminal one, and the status joins the active-list filter.
"""

from ..api.models import TrainingSession
from .diff import Budget, adopt, diff_session
from .list_pass import run_pass
from .state import ScanPosition, TrackerState
from .tracker_io import Observation, TrackerConfig

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
