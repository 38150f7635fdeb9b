"""What one sync run shows: its counts, the materialization's metadata, the table's schema."""

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import dagster as dg
import sqlalchemy as sa

from ..api.pages import SkippedItem
from ..resource.tables import db_metadata
from ..storage.rows import SessionRow, StoreCounts, UpsertResult
from ..storage.schema import define_tables


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
        "rows_inserted": dg.MetadataValue.int(written.inserted),
        "rows_updated": dg.MetadataValue.int(written.updated),
        "rows_unchanged": dg.MetadataValue.int(written.unchanged),
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
        # Sessions the API listed but this library could not read: not in the table.
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


SESSION_TABLE_SCHEMA = dg.TableSchema(
    [
        dg.TableColumn(
            c.name, "integer" if isinstance(c.type, sa.Integer) else "text", description=c.doc
        )
        for c in define_tables().sessions.columns
    ]
)
