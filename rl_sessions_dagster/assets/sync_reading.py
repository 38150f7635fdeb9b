"""What a sync run reads (a full walk, or what changed, with the sensors' core on its own
:class:`TrackerState` kept in the tables' database) and what it shows in its metadata."""

import hashlib
import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import dagster as dg

from ..api.clock import ServerClock, to_ms
from ..api.models import TrainingSession
from ..api.pages import SkippedItem
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
from ..resource.tables import db_metadata
from ..storage.rows import SessionRow, StoreCounts, UpsertResult

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


@dataclass
class SyncStats:
    """What one sync did: rows written per table, the newest sessions seen, API requests."""

    newest_limit: int = 10
    mode: str = "full"  # or "incremental"
    sessions_seen: int = 0
    checkpoints_seen: int = 0
    duplicates_skipped: int = 0
    sessions_marked_missing: int = 0
    sessions_written: UpsertResult = field(default_factory=UpsertResult)
    checkpoints_written: UpsertResult = field(default_factory=UpsertResult)
    api_requests: int = 0
    api_retries: int = 0  # each one is a WARNING in the run's log
    seconds: float = 0.0
    #: List items the API sent that could not be read (not in the table).
    skipped: list[SkippedItem] = field(default_factory=list)
    _newest: list[tuple[str, str, SessionRow]] = field(default_factory=list, repr=False)

    def observe(self, row: SessionRow, n_checkpoints: int) -> None:
        self.sessions_seen += 1
        self.checkpoints_seen += n_checkpoints
        if self.newest_limit:
            item = (row.created_at or "", row.id, row)  # a min-heap on (created_at, id)
            if len(self._newest) < self.newest_limit:
                heapq.heappush(self._newest, item)
            elif item[:2] > self._newest[0][:2]:
                heapq.heapreplace(self._newest, item)

    @property
    def newest(self) -> list[SessionRow]:
        """The newest sessions seen, newest first."""
        return [row for *_, row in sorted(self._newest, key=lambda t: t[:2], reverse=True)]


def _md_cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


#: Skipped items listed in the metadata table (the count covers all of them).
SKIPPED_SHOWN = 20


def _skipped_table(items: Sequence[SkippedItem]) -> str:
    lines = ["| session id | field | reason |", "|---|---|---|"]
    for item in items[:SKIPPED_SHOWN]:
        cells = (f"`{item.id}`" if item.id else "(no id)", item.field or "(item)", item.reason)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    if len(items) > SKIPPED_SHOWN:
        lines.append(f"| … {len(items) - SKIPPED_SHOWN} more | | |")
    return "\n".join(lines)


def _newest_table(rows: Sequence[SessionRow]) -> str:
    lines = [
        "| created (UTC) | display_name | status | step | checkpoints | W&B | session id |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        created = (r.created_at or "")[:19].replace("T", " ")
        wandb = f"[{_md_cell(r.wandb_project or 'run')}]({r.wandb_url})" if r.wandb_url else ""
        cells = (created, r.display_name, r.status, r.step, r.n_inference_checkpoints)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + f" | {wandb} | `{r.id}` |")
    return "\n".join(lines)


def sync_metadata(
    stats: SyncStats, counts: StoreCounts, db_path: str
) -> dict[str, dg.MetadataValue]:
    """The materialization's metadata: table size, status mix, what this run wrote, cost."""
    written = stats.sessions_written + stats.checkpoints_written
    meta: dict[str, dg.MetadataValue] = {
        "dagster/row_count": dg.MetadataValue.int(counts.sessions),
        "sync_mode": dg.MetadataValue.text(stats.mode),
        "checkpoint_row_count": dg.MetadataValue.int(counts.checkpoints),
        "sessions_by_status": dg.MetadataValue.json(dict(counts.sessions_by_status)),
        "newest_sessions": dg.MetadataValue.md(_newest_table(stats.newest)),
        "sessions_seen": dg.MetadataValue.int(stats.sessions_seen),
        "checkpoints_seen": dg.MetadataValue.int(stats.checkpoints_seen),
        **{f"rows_{name}": dg.MetadataValue.int(n) for name, n in written.as_dict().items()},
        "rows_written": dg.MetadataValue.json(
            {
                "rl_sessions": stats.sessions_written.as_dict(),
                "rl_checkpoints": stats.checkpoints_written.as_dict(),
            }
        ),
        "sessions_missing": dg.MetadataValue.int(counts.sessions_missing),
        "sessions_marked_missing": dg.MetadataValue.int(stats.sessions_marked_missing),
        "api_requests": dg.MetadataValue.int(stats.api_requests),
        "api_retries": dg.MetadataValue.int(stats.api_retries),
        "sync_seconds": dg.MetadataValue.float(round(stats.seconds, 3)),
        "skipped_items": dg.MetadataValue.int(len(stats.skipped)),
    }
    if stats.skipped:
        meta["skipped_sessions"] = dg.MetadataValue.md(_skipped_table(stats.skipped))
    # One number per status too: numeric metadata is plotted across materializations.
    for status, n in sorted(counts.sessions_by_status.items()):
        meta[f"sessions_{status.lower()}"] = dg.MetadataValue.int(n)
    if db_path != ":memory:":  # the URL may hold a password: recorded masked
        meta["db_path"] = db_metadata(db_path)
    return meta
