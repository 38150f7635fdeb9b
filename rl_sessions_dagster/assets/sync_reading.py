"""What a sync run reads: a full walk lists every session; an incremental run reads what can have
changed with the sensors' core (``collect`` → ``advance``) on its own :class:`TrackerState`, kept
in the tables' database."""

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import dagster as dg

from ..api.clock import ServerClock, to_ms
from ..api.models import TrainingSession
from ..core.events import (
    ListOrder,
    Observation,
    OrderEvidence,
    ScannedPage,
    SessionFilter,
    TrackerConfig,
)
from ..core.state import TrackerState
from ..core.tracker import advance

#: Ten years: never on a clock, the reconciliation walk does it instead.
_NEVER_MS = 10 * 365 * 24 * 3600 * 1000

#: The sync's tracker policy: every kind tracked (statuses and checkpoints); an unordered list
#: is scanned whole each run (exact, at the cost of a walk of the finished sessions); the order
#: is re-checked and unknown statuses rediscovered by the reconciliation walk, not every 6 h.
SYNC_TRACKER_CONFIG = TrackerConfig(
    unordered_pages_per_tick=None, order_recheck_ms=_NEVER_MS, rediscover_ms=_NEVER_MS
)

_KEY_FIELDS = ("model_resources_id", "created_by", "display_name", "wandb_project", "wandb_group")


def state_key(asset_key: dg.AssetKey, flt: SessionFilter | None) -> str:
    """One state per sync asset and filter: another filter sees other sessions."""
    parts = [asset_key.to_user_string()]
    if flt is not None:
        parts += [f"{n}={v}" for n in _KEY_FIELDS if (v := getattr(flt, n)) is not None]
        if flt.predicate is not None:
            name = getattr(flt.predicate, "__qualname__", type(flt.predicate).__name__)
            parts.append(f"predicate={getattr(flt.predicate, '__module__', '')}.{name}")
    key = " ".join(parts)
    if len(key) > 255:  # the column's bound: keep it unique
        key = key[:230] + " #" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return key


@dataclass
class WalkWatch:
    """What a full walk saw that the tracker needs: its baseline, or the list's order confirmed."""

    clock: ServerClock
    now_ms: int
    live: list[TrainingSession] = field(default_factory=list)
    unknown: list[TrainingSession] = field(default_factory=list)
    newest: TrainingSession | None = None
    evidence: OrderEvidence = field(default_factory=OrderEvidence)
    server_now_ms: int | None = None
    complete: bool = False

    def watch(self, sessions: Iterable[TrainingSession]) -> Iterator[TrainingSession]:
        for s in sessions:
            if self.server_now_ms is None:  # the API's clock at the first page
                self.server_now_ms = self.clock.last_ms
            if s.status.is_active:
                self.live.append(s)
            elif not s.status.is_terminal:  # a status newer than this library
                self.unknown.append(s)
            if (ms := to_ms(s.created_at)) is not None:
                self.evidence.see(ms)
                if self.newest is None or ms > (to_ms(self.newest.created_at) or 0):
                    self.newest = s
            yield s
        self.complete = True

    def baseline(self) -> TrackerState:
        """The state a sensor's first tick would build from these sessions (they are history)."""
        shown = [*self.unknown, *([self.newest] if self.newest is not None else [])]
        obs = Observation(
            now_ms=self.now_ms,
            server_now_ms=self.server_now_ms,
            active=self.live,
            discovery_pages=[ScannedPage(None, shown, None)],
            discovery_complete=True,
        )
        state = advance(TrackerState(), obs, SYNC_TRACKER_CONFIG).state
        self.confirm_order(state)
        return state

    def confirm_order(self, state: TrackerState) -> None:
        """A complete walk checks the order as a complete scan pass would: newest first lets the
        next runs stop at the floor; any other verdict makes the next pass check again."""
        if not self.complete or state.scan is not None:
            return
        if self.evidence.verdict() is ListOrder.NEWEST_FIRST:
            if state.order in (ListOrder.UNVERIFIED, ListOrder.NEWEST_FIRST):
                state.order, state.verified_ms = ListOrder.NEWEST_FIRST, self.now_ms
        elif state.order is ListOrder.NEWEST_FIRST:
            state.order, state.tail = ListOrder.UNVERIFIED, None
