"""The spend asset: estimated GPU cost per model resource, per session and per sweep.

Each run lists the model resources and the sessions, folds what it sees into the billed spans
kept in the library's tables (:func:`~rl_sessions_dagster.resource.open_table_store`, the same
database as the sync's), prices each configuration
once with ``estimate-cost`` (no side effects; cached per configuration within the run and
stored per resource, so a resource is priced once in its life), and writes the two spend
tables. Its materialization carries the totals and two tables the UI renders
(``MetadataValue.table``): resources and sweeps.

Numbers are estimates: price x observed READY time (see ``core/spend.py`` for how the span is
observed). Schedule it as often as the precision you want on READY transitions. What a run
does is in :mod:`.spend_report`, loaded by the run, not with the definitions.

No ``from __future__ import annotations`` here: Dagster must see the real ``context`` type.
"""

import os
from collections.abc import Sequence

import dagster as dg
from pydantic import Field

from ..api import ServerClock
from ..resource import TogetherRLResource
from ..resource.tables import DEFAULT_DB_FILENAME, open_table_store

__all__ = ["DEFAULT_SPEND_DB_FILENAME", "SPEND_ASSET_KEY", "SpendConfig", "build_spend_asset"]

SPEND_ASSET_KEY = dg.AssetKey(["together", "rl_spend"])
#: The sync's database by default, so spend rows join the rl_sessions table.
DEFAULT_SPEND_DB_FILENAME = DEFAULT_DB_FILENAME


class SpendConfig(dg.Config):
    """Run config of the spend asset."""

    db_path: str | None = Field(
        default=None,
        description=(
            "Override of where this run keeps spans and spend rows: a SQLAlchemy URL (write "
            "$VAR, not the password) or a file path. Default: the tables' database of every "
            "asset (database_url / $RL_TABLES_URL / the instance's PostgreSQL / "
            f"<DAGSTER_HOME>/{DEFAULT_SPEND_DB_FILENAME})."
        ),
    )
    created_by: str | None = Field(
        default=None,
        description='Only these resources ("me" or a user id); every session on them counts.',
    )
    group_by: str = Field(
        default="auto",
        description="Sweep of a session: 'wandb_group', 'name_prefix' (display name up to the "
        "last separator) or 'auto' (W&B group, else name prefix).",
    )
    name_separator: str = "-"
    table_rows: int = Field(default=50, ge=1, le=1000, description="Rows per metadata table.")


def build_spend_asset(
    *,
    key: dg.AssetKey | str | Sequence[str] = SPEND_ASSET_KEY,
    resource_key: str = "together",
    db_path: str | None = None,
    group_name: str | None = "together_rl",
    description: str | None = None,
) -> dg.AssetsDefinition:
    """An asset estimating what the GPUs cost, per resource, session and sweep (schedule it,
    e.g. with ``dg.ScheduleDefinition``; every run refines the observed READY spans)."""

    @dg.asset(
        key=dg.AssetKey.from_coercible(key),
        description=description
        or "Estimated Together RL GPU spend: price_per_hour x billed READY time, per model "
        "resource, session and sweep (tables rl_resource_spend, rl_session_spend).",
        group_name=group_name,
        kinds={"together", "sql"},
        required_resource_keys={resource_key},
        metadata={"dagster/table_name": "rl_resource_spend"},
    )
    def _spend_asset(
        context: dg.AssetExecutionContext, config: SpendConfig
    ) -> dg.MaterializeResult:
        from .spend_report import run_spend, spend_metadata, sweep_function

        resource: TogetherRLResource = getattr(context.resources, resource_key)
        override = config.db_path or db_path
        if override and override != ":memory:":
            override = os.path.expanduser(os.path.expandvars(override))
        setting = "the run config's db_path" if config.db_path else "the asset's db_path"
        sweep_of = sweep_function(config.group_by, config.name_separator)
        clock = ServerClock()
        with (
            resource.get_client(server_clock=clock) as client,
            open_table_store(resource, context.instance, override, url_setting=setting) as store,
        ):
            path = store.display
            report = run_spend(
                client, store, created_by=config.created_by, sweep_of=sweep_of, clock=clock
            )
        now = report.now_ms
        for err in report.price_errors:
            context.log.warning(f"estimate-cost failed, resource left unpriced: {err}")
        context.log.info(
            f"spend: ${report.spend.total_cost:.2f} over {len(report.spans)} resource(s), "
            f"{len(report.spend.session_ms)} session(s); "
            f"{report.price_requests} estimate-cost request(s), "
            f"{client.stats.requests} API request(s) ({client.stats.retries} retried)"
        )
        metadata = spend_metadata(report, now_ms=now, rows=config.table_rows, path=path)
        # Each retry is a WARNING in this run's log (the resource routes them there).
        metadata["api_requests"] = dg.MetadataValue.int(client.stats.requests)
        metadata["api_retries"] = dg.MetadataValue.int(client.stats.retries)
        return dg.MaterializeResult(metadata=metadata)

    return _spend_asset
