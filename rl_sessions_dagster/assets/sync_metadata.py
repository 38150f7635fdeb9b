"""What one sync run shows: its counts (:class:`SyncStats`) and the materialization's metadata
(table size, status mix, newest sessions, what this run wrote, unreadable items, API cost)
and the column schema of the sessions table."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence

import dagster as dg

from ..api.pages import SkippedItem
from ..resource.tables import db_metadata
from ..storage.rows import SessionRow, StoreCounts, UpsertResult

__all__ = ["SESSION_TABLE_SCHEMA", "SyncStats", "sync_metadata"]


class SyncStats:
    """What one sync did: rows per table, sessions by status, newest sessions, requests."""

    def __init__(self, newest_limit: int = 10) -> None:
        self.sessions_seen = 0
        self.checkpoints_seen = 0
        self.duplicates_skipped = 0
        self.sessions_marked_missing = 0

        self.sessions_written = UpsertResult()
        self.checkpoints_written = UpsertResult()
        self.seen_by_status: Counter[str] = Counter()
        self.api_requests = 0
        self.api_calls = 0
        #: Requests sent again after a transient failure (each one is a WARNING in the run log).
        self.api_retries = 0
        self.seconds = 0.0
        #: List items the API sent that could not be read (not in the table; see metadata).
        self.skipped: list[SkippedItem] = []
        self._newest_limit = newest_limit
        self._newest: list[tuple[str, str, SessionRow]] = []  # min-heap on (created_at, id)

    def observe(self, row: SessionRow, n_checkpoints: int) -> None:
        self.sessions_seen += 1
        self.checkpoints_seen += n_checkpoints
        self.seen_by_status[row.status] += 1
        if self._newest_limit:
            item = (row.created_at or "", row.id, row)
            if len(self._newest) < self._newest_limit:
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
    columns=[
        dg.TableColumn("id", "text", description="Session id (primary key)."),
        dg.TableColumn("display_name", "text"),
        dg.TableColumn("status", "text", description="Short status, e.g. RUNNING."),
        dg.TableColumn("raw_status", "text", description="Status constant as sent by the API."),
        dg.TableColumn("base_model", "text"),
        dg.TableColumn("model_resources_id", "text"),
        dg.TableColumn("created_by", "text"),
        dg.TableColumn("created_at", "text", description="ISO 8601 UTC."),
        dg.TableColumn("updated_at", "text", description="ISO 8601 UTC."),
        dg.TableColumn("step", "integer"),
        dg.TableColumn("error_code", "text"),
        dg.TableColumn("error_message", "text"),
        dg.TableColumn("wandb_url", "text"),
        dg.TableColumn("wandb_project", "text"),
        dg.TableColumn("n_inference_checkpoints", "integer"),
        dg.TableColumn("synced_at", "text", description="When a sync last wrote this row."),
    ]
)
