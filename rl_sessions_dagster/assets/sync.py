"""The scheduled sync: a flat copy of every RL session and its checkpoints. Upserts are idempotent
and the state is saved after the rows, so a failure loses nothing."""

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import sqlalchemy as sa
from pydantic import Field

from ..api import RLSessionsClient
from ..api.clock import ServerClock, to_ms
from ..api.errors import TRANSIENT_ERRORS
from ..api.models import TrainingSession
from ..api.pages import SkippedItem
from ..core.events import SessionFilter
from ..core.reading import collect
from ..core.state import CursorError, TrackerState
from ..core.tracker import advance
from ..resource import TogetherRLResource
from ..resource.session_source import ClientSessionSource
from ..resource.tables import (
    DEFAULT_DB_FILENAME,
    TableConfig,
    expand_target,
    open_table_store,
    table_kinds,
)
from ..storage.rows import CheckpointRow, SessionRow, SessionStore, checkpoint_rows, session_row
from ..storage.schema import define_tables
from .sync_reading import SYNC_TRACKER_CONFIG, SyncStats, WalkWatch, state_key, sync_metadata

SESSION_SYNC_ASSET_KEY = dg.AssetKey(["together", "rl_sessions_table"])

SESSION_TABLE_SCHEMA = dg.TableSchema(
    [
        dg.TableColumn(
            c.name, "integer" if isinstance(c.type, sa.Integer) else "text", description=c.doc
        )
        for c in define_tables().sessions.columns
    ]
)

#: Builds the store for one run from the resolved ``db_path`` (ignore it for non-file stores).
StoreFactory = Callable[[str], "SessionStore"]


class SyncConfig(TableConfig):
    """Run config of the sync asset (all optional; the launchpad shows these)."""

    full: bool = Field(
        default=False,
        description="Walk the whole session list (the reconciliation): brings in what an "
        "incremental run cannot see and marks sessions the API no longer lists. false: read "
        "only what can have changed since the last run (a first run walks everything).",
    )
    page_size: int = Field(default=100, ge=1, le=100, description="Sessions per list request.")
    batch_size: int = Field(
        default=2000,
        ge=1,
        description="Rows per upsert transaction, per table (a session's checkpoints always go "
        "in the same batch); 2000 rows is well under 1 MB.",
    )
    include_training_checkpoints: bool = Field(
        default=True, description="Also store training checkpoints (resume state) as rows."
    )
    newest_sessions: int = Field(
        default=10, ge=0, le=100, description="Rows in the 'newest_sessions' metadata table."
    )
    progress_seconds: float = Field(
        default=10.0, ge=0, description="Seconds between progress log lines; 0: one per session."
    )


def run_sync(
    sessions: "Iterable[TrainingSession]",
    store: "SessionStore",
    *,
    config: SyncConfig = SyncConfig(),
    synced_at: datetime | None = None,
    mark_missing: bool = False,
    on_progress: Callable[[SyncStats], None] | None = None,
    stats: SyncStats | None = None,
    seen: set[str] | None = None,
) -> SyncStats:
    """Upsert ``sessions`` and their checkpoints, holding one page plus one batch; ``mark_missing``
    (an unfiltered walk only) marks stored sessions not listed."""
    now = synced_at or datetime.now(UTC)
    stats = stats if stats is not None else SyncStats(config.newest_sessions)
    started = last_progress = time.perf_counter()
    seen = set() if seen is None else seen
    session_buf: list[SessionRow] = []
    checkpoint_buf: list[CheckpointRow] = []

    def flush() -> None:  # sessions first: never a checkpoint whose session row is missing
        if session_buf:
            stats.sessions_written += store.upsert_sessions(session_buf)
            session_buf.clear()
        if checkpoint_buf:
            stats.checkpoints_written += store.upsert_checkpoints(checkpoint_buf)
            checkpoint_buf.clear()

    for session in sessions:
        if session.id in seen:
            stats.duplicates_skipped += 1
            continue
        seen.add(session.id)
        row = session_row(session, now)
        rows = checkpoint_rows(session, now, include_training=config.include_training_checkpoints)
        stats.observe(row, len(rows))
        session_buf.append(row)
        checkpoint_buf.extend(rows)
        if on_progress and time.perf_counter() - last_progress >= config.progress_seconds:
            on_progress(stats)
            last_progress = time.perf_counter()
        if max(len(session_buf), len(checkpoint_buf)) >= config.batch_size:
            flush()
    flush()
    if mark_missing and hasattr(store, "mark_missing"):  # optional for a store
        stats.sessions_marked_missing += store.mark_missing(seen, now)
    stats.seconds += time.perf_counter() - started
    return stats


def build_session_sync_asset(
    *,
    key: dg.AssetKey | str | Sequence[str] = SESSION_SYNC_ASSET_KEY,
    resource_key: str = "together",
    db_path: str | None = None,
    store_factory: StoreFactory | None = None,
    session_filter: "SessionFilter | None" = None,
    created_by: str | None = None,
    model_resources_id: str | None = None,
    group_name: str | None = "together_rl",
    kinds: set[str] | None = None,
    description: str | None = None,
) -> dg.AssetsDefinition:
    """An asset syncing every (matching) RL session into ``rl_sessions`` and ``rl_checkpoints``;
    ``created_by`` and ``model_resources_id`` go to the API, the rest of the filter per session."""
    shortcuts = {"created_by": created_by, "model_resources_id": model_resources_id}
    given: dict[str, Any] = {name: value for name, value in shortcuts.items() if value is not None}
    flt = session_filter
    if given:
        flt = session_filter or SessionFilter()
        for name, value in given.items():
            if (current := getattr(flt, name)) is not None and current != value:
                raise ValueError(f"{name}={value!r} contradicts session_filter.{name}={current!r}")
        flt = dataclasses.replace(flt, **given)
    scope = [f"{n}={v}" for n in shortcuts if flt is not None and (v := getattr(flt, n))]
    scope_text = f" (filtered: {', '.join(scope)})" if scope else ""

    asset_key = dg.AssetKey.from_coercible(key)

    @dg.asset(
        key=asset_key,
        description=description
        or (
            "Every Together AI RL training session and its checkpoints" + scope_text + ", "
            "synced into the tables rl_sessions and rl_checkpoints (idempotent upserts). A run "
            "reads what can have changed since the last one; run config full: true walks the "
            "whole list and marks what the API no longer lists."
        ),
        group_name=group_name,
        kinds=table_kinds(db_path) if kinds is None else kinds,
        required_resource_keys={resource_key},
        metadata={
            "dagster/table_name": "rl_sessions",
            "dagster/column_schema": dg.MetadataValue.table_schema(SESSION_TABLE_SCHEMA),
        },
    )
    def _sync_asset(context: dg.AssetExecutionContext, config: SyncConfig) -> dg.MaterializeResult:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        path, setting = config.override(db_path)
        skipped: list[SkippedItem] = []
        clock = ServerClock()
        with resource.get_client(server_clock=clock) as client:

            def progress(s: SyncStats) -> None:  # while the walk runs; a list page is one call
                context.log.info(
                    f"sync in progress: {client.stats.calls} page(s) read, {s.sessions_seen} "
                    f"sessions and {s.checkpoints_seen} checkpoints so far, "
                    f"{client.stats.retries} API request(s) retried"
                )

            if store_factory is not None:
                root = context.instance.root_directory
                path = expand_target(path) if path else os.path.join(root, DEFAULT_DB_FILENAME)
                opened: Any = contextlib.closing(store_factory(path))
            else:
                opened = open_table_store(resource, context.instance, path, url_setting=setting)
            with opened as store:
                path = getattr(store, "display", path)
                run = _Run(context.log, client, clock, store, config, flt, skipped, progress)
                stats = run.sync(state_key(asset_key, flt))
                counts = store.counts()
            stats.api_requests = client.stats.requests
            stats.api_retries = client.stats.retries
            stats.skipped = skipped
        for item in skipped:
            context.log.warning(
                f"skipped a session the API listed but this library cannot read: {item.id} "
                f"({item.field or '(item)'}: {item.reason})"
            )
        marked = f", {stats.sessions_marked_missing} marked missing"
        context.log.info(
            f"synced ({stats.mode}) {stats.sessions_seen} sessions and {stats.checkpoints_seen} "
            f"checkpoints in {stats.seconds:.1f} s with {stats.api_requests} API requests "
            f"({stats.api_retries} retried); sessions {stats.sessions_written.as_dict()}{marked}, "
            f"checkpoints {stats.checkpoints_written.as_dict()}"
        )
        return dg.MaterializeResult(metadata=sync_metadata(stats, counts, path or ""))

    return _sync_asset


@dataclasses.dataclass
class _Run:
    """A full walk, an incremental read, or both (``full`` with a saved state: nothing unwatched)."""

    log: Any
    client: RLSessionsClient
    clock: ServerClock
    store: "SessionStore"
    config: SyncConfig
    flt: "SessionFilter | None"
    skipped: list[SkippedItem]
    progress: Callable[[SyncStats], None]
    now: datetime = dataclasses.field(default_factory=lambda: datetime.now(UTC))
    #: sessions written this run: a full run's read of changes adds only what the walk missed.
    seen: set[str] = dataclasses.field(default_factory=set)

    def sync(self, key: str) -> SyncStats:
        saved, why = self._saved_state(key)
        stats = SyncStats(self.config.newest_sessions)
        stats.mode = "full" if self.config.full or saved is None else "incremental"
        self.log.info(f"sync mode: {stats.mode} ({'full: true' if self.config.full else why})")
        state = saved
        if stats.mode == "full":
            walk, flt = WalkWatch(self.clock, to_ms(self.now) or 0), self.flt
            listing: Iterable[TrainingSession] = self.client.list_sessions(
                created_by=flt.created_by if flt else None,
                model_resources_id=flt.model_resources_id if flt else None,
                page_size=self.config.page_size,
                on_skipped=self.skipped.append,
            )
            if flt is not None:  # the API filtered the list: its word holds for what it filtered
                listing = (s for s in listing if flt.matches(s, listed=True))
            self._write(walk.watch(listing), stats, mark=flt is None)
            if saved is None:
                state = walk.baseline()
            else:
                walk.confirm_order(saved)
        if saved is not None:
            state = self._read_changes(saved, stats)
        if state is not None and hasattr(self.store, "save_sync_state"):
            self.store.save_sync_state(key, state.to_cursor(), stats.mode, self.now)
        return stats

    def _saved_state(self, key: str) -> tuple[TrackerState | None, str]:
        if not hasattr(self.store, "load_sync_state"):  # optional for a store
            return None, "this store keeps no sync state: every run walks the whole list"
        text = self.store.load_sync_state(key)
        if text is None:
            return None, "no saved state yet: this run walks the whole list and saves one"
        try:
            return TrackerState.from_cursor(text), "reading what changed since the last run"
        except CursorError as exc:
            return None, f"the saved state is unreadable ({exc}): walking the whole list"

    def _write(self, sessions: Iterable[TrainingSession], stats: SyncStats, mark: bool) -> None:
        run_sync(
            sessions,
            self.store,
            config=self.config,
            synced_at=self.now,
            mark_missing=mark,
            on_progress=self.progress,
            stats=stats,
            seen=self.seen,
        )

    def _read_changes(self, state: TrackerState, stats: SyncStats) -> TrackerState:
        flt = self.flt or SessionFilter()
        source = ClientSessionSource(
            self.client, flt, page_size=self.config.page_size, server_clock=self.clock
        )
        collected = collect(
            state,
            SYNC_TRACKER_CONFIG,
            source,
            now_ms=to_ms(self.now) or 0,
            transient=TRANSIENT_ERRORS,
            discovery_pages_per_tick=None,
        )
        self.skipped.extend(source.skipped)
        obs = collected.observation
        fetched = [s for s in obs.fetched.values() if s is not None]  # the latest reads first
        pages = [s for p in [*obs.pages, *obs.discovery_pages] for s in p.sessions]
        self._write([*fetched, *obs.active, *pages], stats, mark=False)
        gone = [sid for sid, s in obs.fetched.items() if s is None]  # 404: the API forgot them
        if gone and hasattr(self.store, "mark_sessions_missing"):  # optional for a store
            stats.sessions_marked_missing += self.store.mark_sessions_missing(gone, self.now)
        scanned = len(obs.pages) + len(obs.discovery_pages)
        self.log.info(
            f"read what changed with {collected.requests} request(s): {len(obs.active)} active "
            f"session(s), {len(obs.fetched)} fetched by id ({len(gone)} gone), {scanned} page(s) "
            "of finished or unfiltered sessions"
        )
        for sid in collected.unreadable:
            self.log.warning(f"session {sid} could not be read; it is read again next run")
        if collected.interrupted:
            raise dg.Failure(
                f"the sync's read stopped early ({collected.interrupted}); what it read is "
                "written, and the next run reads the rest (its state was not saved)"
            )
        outcome = advance(state, obs, SYNC_TRACKER_CONFIG)
        for note in outcome.notes:
            self.log.info(note)
        return outcome.state
