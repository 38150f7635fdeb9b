"""One tick's reads, in order, against any session source (the HTTP client or an in-memory
fake): list the active sessions, fetch by id the tracked ones that left that list, then page
the finished-session list as planned.

It holds no I/O of its own; the source does. A read that fails transiently, or a budget that
runs out, ends collection early with what was read so far marked incomplete, so progress is
kept and the rest follows on the next tick. Only a failure to list the active sessions aborts
the tick, since without that list nothing can be concluded.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..api.models import TrainingSession
from .state import TrackerState
from .tracker import Observation, ScannedPage, TrackerConfig, plan_scan, sessions_to_fetch, to_ms


class SessionSource(Protocol):
    """What the tracker needs to read. Pages return ``(sessions, next_after or None)``."""

    def list_active_page(self, after: str | None) -> tuple[list[TrainingSession], str | None]: ...

    def list_terminal_page(self, after: str | None) -> tuple[list[TrainingSession], str | None]: ...

    def get_session(self, session_id: str) -> TrainingSession | None:
        """The session, or None when the API answers 404."""
        ...

    def server_time_ms(self) -> int | None:
        """The API's clock (HTTP ``Date``) at the last response, if known."""
        ...


@dataclass
class Collected:
    observation: Observation
    #: why collection stopped early ("" when it did not): budget, or the transient error.
    interrupted: str = ""
    requests: int = 0
    fetched_ids: list[str] = field(default_factory=list)


def collect(
    state: TrackerState,
    config: TrackerConfig,
    source: SessionSource,
    *,
    now_ms: int,
    out_of_time: Callable[[], bool] = lambda: False,
    transient: tuple[type[BaseException], ...] = (),
    max_fetches: int | None = None,
) -> Collected:
    """Read what this tick needs. Raises only if the active list cannot be read in full."""
    result = Collected(Observation(now_ms=now_ms))
    obs = result.observation

    active: list[TrainingSession] = []
    after: str | None = None
    while True:
        page, after = source.list_active_page(after)
        result.requests += 1
        active.extend(page)
        if after is None:
            break
        if out_of_time():
            # Without the whole active list, departures cannot be told apart: keep what we
            # saw (new checkpoints still count) and skip the rest of the tick.
            obs.active, obs.active_complete = active, False
            result.interrupted = "time budget used up while listing active sessions"
            return result
    obs.active = active
    obs.server_now_ms = source.server_time_ms()

    # Departures first: they are sessions we know have events due. A slow scan must not
    # starve them (the scan's finds are only delayed when it is cut short: the watermark
    # waits for a complete pass).
    fetched: dict[str, TrainingSession | None] = {}
    missing = sessions_to_fetch(state, active, ())
    try:
        for sid in missing:
            if out_of_time() or (max_fetches is not None and len(fetched) >= max_fetches):
                result.interrupted = (
                    f"time budget used up after fetching {len(fetched)} of {len(missing)} sessions"
                )
                break
            fetched[sid] = source.get_session(sid)
            result.requests += 1
    except transient as exc:
        result.interrupted = f"{type(exc).__name__}: {exc}"
    obs.fetched = fetched
    result.fetched_ids = list(fetched)
    if result.interrupted:
        return result
    obs.pages, obs.scan_complete, obs.order_violation, result.interrupted, n = _scan_pages(
        state, config, source, out_of_time, transient
    )
    result.requests += n
    return result


def _scan_pages(
    state: TrackerState,
    config: TrackerConfig,
    source: SessionSource,
    out_of_time: Callable[[], bool],
    transient: tuple[type[BaseException], ...],
) -> tuple[list[ScannedPage], bool, bool, str, int]:
    """Page the finished-session list as planned, checking the newest-first order on the way.

    Returns (pages, pass complete, order violated, why it stopped early or "", requests).
    """
    plan = plan_scan(state, config)
    pages: list[ScannedPage] = []
    complete = violated = False
    interrupted = ""
    after, newest_seen = plan.start.after, plan.start.low_ms
    try:
        while plan.max_pages != 0:
            if out_of_time():
                interrupted = "time budget used up while scanning finished sessions"
                break
            sessions, next_after = source.list_terminal_page(after)
            page = ScannedPage(after, sessions, next_after)
            pages.append(page)
            stop_here = False
            for s in sessions:
                ms = to_ms(s.created_at)
                if ms is None:
                    continue
                if newest_seen is not None and ms > newest_seen:
                    violated = True
                newest_seen = ms if newest_seen is None else min(newest_seen, ms)
                early_stop_allowed = plan.stop_below_ms is not None and not violated
                if early_stop_allowed and ms < (plan.stop_below_ms or 0):
                    stop_here = True
            page.low_ms = newest_seen
            if next_after is None or stop_here:
                complete = True
                break
            if plan.max_pages is not None and len(pages) >= plan.max_pages:
                break
            after = next_after
    except transient as exc:
        interrupted = f"{type(exc).__name__}: {exc}"
    return pages, complete, violated, interrupted, len(pages)
