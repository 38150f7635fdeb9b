"""The scheduled sync: a full, flat copy of every RL session and the checkpoints it embeds, for
dashboards, notebooks and audits (the sensors react to changes). Cheap on the API: one paged
list walk, never a request per session. Rows are upserted in batches and only changed rows
rewritten, so a re-run is idempotent and a failure half-way keeps the batches already written.
"""

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

import dagster as dg
from pydantic import Field

from ..api.models import TrainingSession
from ..api.pages import SkippedItem
from ..core.events import SessionFilter
from ..resource import TogetherRLResource
from ..resource.tables import (
    DEFAULT_DB_FILENAME,
    TableConfig,
    expand_target,
    open_table_store,
    table_kinds,
)
from ..storage.rows import (
    CheckpointRow,
    SessionRow,
    SessionStore,
    checkpoint_rows,
    session_row,
)
from .sync_metadata import SESSION_TABLE_SCHEMA, SyncStats, sync_metadata

SESSION_SYNC_ASSET_KEY = dg.AssetKey(["together", "rl_sessions_table"])

#: Builds the store for one run from the resolved ``db_path`` (ignore it for non-file stores).
StoreFactory = Callable[[str], "SessionStore"]


class SyncConfig(TableConfig):
    """Run config of the sync asset (all optional; the launchpad shows these)."""

    page_size: int = Field(
        default=100, ge=1, le=100, description="Sessions per list request (API maximum 100)."
    )
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
        default=10.0,
        ge=0,
        description="Log a progress line (pages, sessions, checkpoints, retries so far) at most "
        "this often while the sync runs; 0 logs one per session.",
    )


def _flush(
    store: "SessionStore",
    sessions: "list[SessionRow]",
    checkpoints: "list[CheckpointRow]",
    stats: SyncStats,
) -> None:
    # Sessions first: a reader never sees a checkpoint whose session row is missing.
    if sessions:
        stats.sessions_written += store.upsert_sessions(sessions)
        sessions.clear()
    if checkpoints:
        stats.checkpoints_written += store.upsert_checkpoints(checkpoints)
        checkpoints.clear()


def run_sync(
    sessions: "Iterable[TrainingSession]",
    store: "SessionStore",
    *,
    batch_size: int = 2000,
    include_training_checkpoints: bool = True,
    keep: "Callable[[TrainingSession], bool] | None" = None,
    newest_limit: int = 10,
    synced_at: datetime | None = None,
    mark_missing: bool = False,
    on_progress: Callable[[SyncStats], None] | None = None,
    progress_seconds: float = 10.0,
) -> SyncStats:
    """Upsert every session of ``sessions`` (and its embedded checkpoints) into ``store``,
    holding one API page plus one batch. A session listed twice (pages shifting under a create)
    is written once; ``keep`` drops sessions client-side; ``mark_missing`` (an unfiltered walk
    only) marks stored sessions it did not list; ``on_progress`` sees the running stats."""
    now = synced_at or datetime.now(UTC)
    stats = SyncStats(newest_limit)
    started = last_progress = time.perf_counter()
    seen: set[str] = set()
    session_buf: list[SessionRow] = []
    checkpoint_buf: list[CheckpointRow] = []
    for session in sessions:
        if keep is not None and not keep(session):
            continue
        if session.id in seen:
            stats.duplicates_skipped += 1
            continue
        seen.add(session.id)
        row = session_row(session, now)
        rows = checkpoint_rows(session, now, include_training=include_training_checkpoints)
        stats.observe(row, len(rows))
        session_buf.append(row)
        checkpoint_buf.extend(rows)
        if on_progress is not None and time.perf_counter() - last_progress >= progress_seconds:
            on_progress(stats)
            last_progress = time.perf_counter()
        if len(session_buf) >= batch_size or len(checkpoint_buf) >= batch_size:
            _flush(store, session_buf, checkpoint_buf, stats)
    _flush(store, session_buf, checkpoint_buf, stats)
    if mark_missing and hasattr(store, "mark_missing"):  # optional for a store
        stats.sessions_marked_missing = store.mark_missing(seen, now)
    stats.seconds = time.perf_counter() - started
    return stats


def _build_filter(
    session_filter: "SessionFilter | None",
    created_by: str | None,
    model_resources_id: str | None,
) -> "SessionFilter | None":
    shortcuts = (("created_by", created_by), ("model_resources_id", model_resources_id))
    given: dict[str, Any] = {name: value for name, value in shortcuts if value is not None}
    if not given:
        return session_filter
    base = session_filter or SessionFilter()
    for name, value in given.items():
        current = getattr(base, name)
        if current is not None and current != value:
            raise ValueError(f"{name}={value!r} contradicts session_filter.{name}={current!r}")
    return dataclasses.replace(base, **given)


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
    """An asset syncing every (matching) RL session and its checkpoints into ``rl_sessions``
    and ``rl_checkpoints``. ``db_path`` overrides the tables' database of every asset;
    ``store_factory`` builds another :class:`~rl_sessions_dagster.storage.SessionStore` from it.
    ``created_by``/``model_resources_id`` (shortcuts or the filter's) go to the API; the rest of
    ``session_filter`` is checked per session."""
    flt = _build_filter(session_filter, created_by, model_resources_id)
    scope = [
        f"{name}={value}"
        for name in ("created_by", "model_resources_id")
        if flt is not None and (value := getattr(flt, name))
    ]
    scope_text = f" (filtered: {', '.join(scope)})" if scope else ""

    @dg.asset(
        key=dg.AssetKey.from_coercible(key),
        description=description
        or (
            "Every Together AI RL training session and its checkpoints" + scope_text + ", "
            "synced into the tables rl_sessions and rl_checkpoints (idempotent upserts; one "
            "paged list walk, no request per session)."
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
        resource = getattr(context.resources, resource_key)
        if not isinstance(resource, TogetherRLResource):
            raise dg.DagsterInvariantViolationError(
                f"resource {resource_key!r} must be a TogetherRLResource, got "
                f"{type(resource).__name__}"
            )
        path, setting = config.override(db_path)
        skipped: list[SkippedItem] = []

        with resource.get_client() as client:

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
                listing = client.list_sessions(
                    created_by=flt.created_by if flt else None,
                    model_resources_id=flt.model_resources_id if flt else None,
                    page_size=config.page_size,
                    on_skipped=skipped.append,
                )
                stats = run_sync(
                    listing,
                    store,
                    batch_size=config.batch_size,
                    include_training_checkpoints=config.include_training_checkpoints,
                    # The list is filtered by the API: its word holds for what it filtered.
                    keep=partial(flt.matches, listed=True) if flt is not None else None,
                    newest_limit=config.newest_sessions,
                    mark_missing=flt is None,
                    on_progress=progress,
                    progress_seconds=config.progress_seconds,
                )
                counts = store.counts()
            stats.api_requests = client.stats.requests
            stats.api_retries = client.stats.retries
            stats.skipped = skipped
        for item in skipped:
            context.log.warning(
                f"skipped a session the API listed but this library cannot read: {item.id} "
                f"({item.field or '(item)'}: {item.reason})"
            )
        context.log.info(
            f"synced {stats.sessions_seen} sessions and {stats.checkpoints_seen} checkpoints in "
            f"{stats.seconds:.1f} s with {stats.api_requests} API requests ({stats.api_retries} "
            f"retried); sessions {stats.sessions_written.as_dict()}, checkpoints "
            f"{stats.checkpoints_written.as_dict()}"
        )
        return dg.MaterializeResult(metadata=sync_metadata(stats, counts, path or ""))

    return _sync_asset
