"""The scheduled sync: every RL session and checkpoint into a queryable table.

The sensors react to *changes*; this asset keeps a full, flat copy of the account (sessions
and the checkpoints they embed) for dashboards, notebooks and audits, refreshed by a
schedule. It is deliberately cheap on the API:

* one paged ``GET /v1/rl/training-sessions`` walk (100 per page, one page in memory), and the
  checkpoints come from the session objects themselves, never one request per session;
* rows are upserted in batches of ``batch_size`` rows (one transaction per table and batch),
  and the store only rewrites rows whose content changed, so re-running is idempotent and
  nearly write-free;
* a failure half-way keeps the batches already written; the next run completes the table.

No ``from __future__ import annotations`` here: Dagster must see the real ``context`` type.
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
from ..resource.tables import DEFAULT_DB_FILENAME, open_table_store
from ..storage.rows import (
    CheckpointRow,
    MarksMissing,
    SessionRow,
    SessionStore,
    checkpoint_rows,
    session_row,
)
from ..storage.urls import backend_of
from .sync_metadata import SESSION_TABLE_SCHEMA, SyncStats, sync_metadata

__all__ = [
    "DEFAULT_DB_FILENAME",
    "SESSION_SYNC_ASSET_KEY",
    "StoreFactory",
    "SyncConfig",
    "SyncStats",
    "build_session_sync_asset",
    "run_sync",
]

SESSION_SYNC_ASSET_KEY = dg.AssetKey(["together", "rl_sessions_table"])

#: Builds the store for one run from the resolved ``db_path`` (ignore it for non-file stores).
StoreFactory = Callable[[str], "SessionStore"]


class SyncConfig(dg.Config):
    """Run config of the sync asset (all optional; the launchpad shows these)."""

    db_path: str | None = Field(
        default=None,
        description=(
            "Override of where this run writes the tables: a SQLAlchemy URL (keep its password "
            "out of run config: write $SYNC_DB_URL) or a file path; environment variables and "
            "~ are expanded. Default: the path given to the asset factory, else the tables' "
            "database of the resource (database_url / $RL_TABLES_URL / the instance's "
            f"PostgreSQL / <DAGSTER_HOME>/{DEFAULT_DB_FILENAME})."
        ),
    )
    page_size: int = Field(
        default=100, ge=1, le=100, description="Sessions per list request (API maximum 100)."
    )
    batch_size: int = Field(
        default=2000,
        ge=1,
        description=(
            "Rows per upsert transaction, per table (a session's checkpoints always go in the "
            "same batch). Bigger batches mean fewer commits; 2000 rows is well under 1 MB."
        ),
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


def _resolve_db_path(configured: str | None, default: str | None) -> str | None:
    """The asset's own override (run config, then builder), expanded; None: the resource's."""
    path = configured or default
    if path is None or path == ":memory:":
        return path
    return os.path.expanduser(os.path.expandvars(path))


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
    """Upsert every session of ``sessions`` (and its embedded checkpoints) into ``store``.

    The Dagster-free core of the asset: consumes the iterator lazily, so memory is one API page
    plus one batch. A session repeated by the listing (pages shifting under a concurrent
    create) is written once. ``keep`` drops sessions client-side (name / W&B filters).
    ``mark_missing``: once the walk is complete, stored sessions it did not list get
    ``missing_since`` (only meaningful for an unfiltered walk; stores without it are skipped).
    ``on_progress`` gets the running stats at most every ``progress_seconds`` (checked per
    session), so a long walk is visible while it runs and not only at the end.
    """

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
    if mark_missing and isinstance(store, MarksMissing):
        stats.sessions_marked_missing = store.mark_missing(seen, now)
    stats.seconds = time.perf_counter() - started
    return stats


def _build_filter(
    session_filter: "SessionFilter | None",
    created_by: str | None,
    model_resources_id: str | None,
) -> "SessionFilter | None":
    if created_by is None and model_resources_id is None:
        return session_filter
    base = session_filter or SessionFilter()
    for name, value in (("created_by", created_by), ("model_resources_id", model_resources_id)):
        current = getattr(base, name)
        if value is not None and current is not None and current != value:
            raise ValueError(f"{name}={value!r} contradicts session_filter.{name}={current!r}")
    return dataclasses.replace(
        base,
        created_by=created_by if created_by is not None else base.created_by,
        model_resources_id=(
            model_resources_id if model_resources_id is not None else base.model_resources_id
        ),
    )


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
    owners: Sequence[str] | None = None,
    kinds: set[str] | None = None,
    description: str | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    pool: str | None = None,
) -> dg.AssetsDefinition:
    """An asset that syncs every (matching) RL session and its checkpoints into a table.

    Example::

        import dagster as dg
        from rl_sessions_dagster import TogetherRLResource
        from rl_sessions_dagster.assets import build_session_sync_asset

        sessions_table = build_session_sync_asset(created_by="me")
        sync_job = dg.define_asset_job("sync_sessions", selection=[sessions_table])
        sync_schedule = dg.ScheduleDefinition(job=sync_job, cron_schedule="*/15 * * * *")
        defs = dg.Definitions(
            assets=[sessions_table], jobs=[sync_job], schedules=[sync_schedule],
            resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
        )

    Args:
        key: asset key (default ``together/rl_sessions_table``).
        resource_key: key of the :class:`TogetherRLResource` in the Definitions.
        db_path: override of the tables' database for this asset (a URL such as
            ``$SYNC_DB_URL``, expanded at run time, or a file path) unless the run config sets
            ``db_path``. Default: the one tables' database of every asset, chosen by
            :func:`~rl_sessions_dagster.resource.open_table_store` (the resource's
            ``database_url``, ``$RL_TABLES_URL``, the instance's PostgreSQL, else
            ``<DAGSTER_HOME>/together_rl_sync.sqlite``).
        store_factory: build another :class:`~rl_sessions_dagster.storage.SessionStore` from the
            resolved ``db_path`` (default: the library's table store, as above).
        session_filter: a :class:`~rl_sessions_dagster.sensors.SessionFilter`; its
            ``created_by``/``model_resources_id`` go to the API, the rest is checked per session.
        created_by, model_resources_id: shortcuts merged into ``session_filter``.
        group_name, owners, kinds, description, retry_policy, pool: passed to ``@dg.asset``.
    """
    flt = _build_filter(session_filter, created_by, model_resources_id)
    if kinds is None:
        # Unset (or "$VAR"), the database is chosen at run time: say only "sql".
        backend = backend_of(db_path) if db_path else None
        if db_path and backend is None and "$" not in db_path:
            backend = "sqlite"  # a plain file path
        kinds = {
            "together",
            {"postgresql": "postgres", "sqlite": "sqlite"}.get(backend or "", "sql"),
        }
    scope = []
    if flt is not None and flt.created_by:
        scope.append(f"created_by={flt.created_by}")
    if flt is not None and flt.model_resources_id:
        scope.append(f"model_resources_id={flt.model_resources_id}")
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
        owners=list(owners) if owners else None,
        kinds=kinds,
        required_resource_keys={resource_key},
        metadata={
            "dagster/table_name": "rl_sessions",
            "dagster/column_schema": dg.MetadataValue.table_schema(SESSION_TABLE_SCHEMA),
        },
        retry_policy=retry_policy,
        pool=pool,
    )
    def _sync_asset(context: dg.AssetExecutionContext, config: SyncConfig) -> dg.MaterializeResult:
        resource = getattr(context.resources, resource_key)
        if not isinstance(resource, TogetherRLResource):
            raise dg.DagsterInvariantViolationError(
                f"resource {resource_key!r} must be a TogetherRLResource, got "
                f"{type(resource).__name__}"
            )
        path = _resolve_db_path(config.db_path, db_path)
        setting = "the run config's db_path" if config.db_path else "the asset's db_path"
        client = resource.get_client()
        skipped: list[SkippedItem] = []

        def progress(s: SyncStats) -> None:  # while the walk runs; a list page is one call
            context.log.info(
                f"sync in progress: {client.stats.calls} page(s) read, {s.sessions_seen} sessions"
                f" and {s.checkpoints_seen} checkpoints so far, {client.stats.retries} API "
                "request(s) retried"
            )

        try:
            if store_factory is not None:
                path = path or os.path.join(context.instance.root_directory, DEFAULT_DB_FILENAME)
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
            stats.api_calls = client.stats.calls
            stats.api_retries = client.stats.retries
            stats.skipped = skipped
        finally:
            client.close()
        for item in skipped:
            context.log.warning(
                "skipped a session the API listed but this library cannot read: %s (%s: %s)",
                item.id,
                item.field or "(item)",
                item.reason,
            )
        context.log.info(
            "synced %d sessions and %d checkpoints in %.1f s with %d API requests (%d retried); "
            "sessions %s, checkpoints %s",
            stats.sessions_seen,
            stats.checkpoints_seen,
            stats.seconds,
            stats.api_requests,
            stats.api_retries,
            stats.sessions_written.as_dict(),
            stats.checkpoints_written.as_dict(),
        )
        return dg.MaterializeResult(metadata=sync_metadata(stats, counts, path or ""))

    return _sync_asset
