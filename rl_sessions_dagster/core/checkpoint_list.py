"""Reading the inference-checkpoint list, which the API documents as newest first.

Two uses, one read from the top of the list each tick:

* re-checking pending registrations of finished sessions: one page usually covers all of
  them, however many sessions wait (instead of one fetch per session);
* for a sensor that only wants checkpoint events, finding the checkpoints of sessions born and
  ended between two ticks, in place of the scan of the finished-session list. A quiet tick of
  such a sensor then costs the active list plus one page of this list.

If the list is ever seen out of order, it is not trusted again: pending registrations are
fetched by id and the finished-session scan takes over.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from ..api.clock import to_ms
from ..api.models import Checkpoint
from .session_source import Reader, SessionSource
from .state import TrackerState
from .tracker import TrackerConfig


@dataclass
class CheckpointRead:
    """One tick's read of the checkpoint list, from the top."""

    items: list[Checkpoint] = field(default_factory=list)
    oldest_ms: int | None = None
    newest_ms: int | None = None
    #: the read went below what was needed (or reached the end of the list).
    complete: bool = False
    #: the list was newest first throughout the read.
    trusted: bool = True

    @property
    def by_id(self) -> dict[str, Checkpoint]:
        return {c.id: c for c in self.items}


def checkpoint_mode(state: TrackerState, config: TrackerConfig) -> bool:
    """Whether this tick finds new checkpoints through the checkpoint list."""
    return (
        config.checkpoints_only
        and state.initialized
        and not state.backfilling
        and not state.checkpoint_list_untrusted
    )


def read_checkpoints(
    reader: Reader,
    source: SessionSource,
    *,
    need_below_ms: int | None,
    max_pages: int | None,
) -> CheckpointRead:
    """Page from the top until an item is older than ``need_below_ms`` (None: one page)."""
    read = CheckpointRead()
    after: str | None = None
    pages = 0
    while max_pages is None or pages < max_pages:
        items, after = reader.read(
            "reading the checkpoint list", partial(source.list_inference_checkpoints_page, after)
        )
        pages += 1
        for c in items:
            read.items.append(c)
            ms = to_ms(c.created_at)
            if ms is None:
                continue
            if read.oldest_ms is not None and ms > read.oldest_ms:
                read.trusted = False
            read.oldest_ms = ms if read.oldest_ms is None else min(read.oldest_ms, ms)
            read.newest_ms = ms if read.newest_ms is None else max(read.newest_ms, ms)
        if after is None:
            read.complete = True
            break
        if need_below_ms is None or (read.oldest_ms is not None and read.oldest_ms < need_below_ms):
            read.complete = need_below_ms is not None
            break
    return read


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
