"""The spend asset: estimated GPU cost (price x observed READY time) per model resource, session
and sweep; each run refines the billed spans kept in the tables, so frequent runs are precise."""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import dagster as dg
from pydantic import Field

from ..api import RLSessionsClient, ServerClock
from ..api.lifecycle import PriceCache
from ..core.spend import (
    HOUR_MS,
    Attachment,
    ResourceSpan,
    Spend,
    attachment,
    compute_spend,
    observe_span,
    sweep_of_auto,
    sweep_totals,
)
from ..partitions import metadata_table
from ..resource import TogetherRLResource
from ..resource.tables import TableConfig, db_metadata, open_table_store, table_kinds
from ..storage import SpendStore
from ..storage.rows import ResourceSpendRow, SessionSpendRow

SPEND_ASSET_KEY = dg.AssetKey(["together", "rl_spend"])


class SpendConfig(TableConfig):
    """Run config of the spend asset."""

    created_by: str | None = Field(
        default=None, description='Only resources of "me" or a user id; all their sessions count.'
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
    """GPU cost per resource, session and sweep; every (scheduled) run refines the READY spans."""

    @dg.asset(
        key=dg.AssetKey.from_coercible(key),
        description=description
        or "Estimated Together RL GPU spend: price_per_hour x billed READY time, per model "
        "resource, session and sweep (tables rl_resource_spend, rl_session_spend).",
        group_name=group_name,
        kinds=table_kinds(db_path),
        required_resource_keys={resource_key},
        metadata={"dagster/table_name": "rl_resource_spend"},
    )
    def _spend_asset(
        context: dg.AssetExecutionContext, config: SpendConfig
    ) -> dg.MaterializeResult:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        override, setting = config.override(db_path)
        sweep_of = sweep_function(config.group_by, config.name_separator)
        clock = ServerClock()
        with (
            resource.get_client(server_clock=clock) as client,
            open_table_store(resource, context.instance, override, url_setting=setting) as store,
        ):
            report = run_spend(
                client, store, created_by=config.created_by, sweep_of=sweep_of, clock=clock
            )
        for err in report.price_errors:
            context.log.warning(f"estimate-cost failed, resource left unpriced: {err}")
        context.log.info(
            f"spend: ${report.spend.total_cost:.2f} over {len(report.spans)} resource(s), "
            f"{len(report.spend.session_ms)} session(s); "
            f"{report.price_requests} estimate-cost request(s), "
            f"{client.stats.requests} API request(s) ({client.stats.retries} retried)"
        )
        metadata = spend_metadata(report, rows=config.table_rows, path=store.display)
        metadata.update(api_requests=client.stats.requests, api_retries=client.stats.retries)
        return dg.MaterializeResult(metadata=metadata)

    return _spend_asset


@dataclass
class SpendReport:
    spend: Spend
    spans: list[ResourceSpan]
    attachments: list[Attachment]
    sweeps: dict[str, tuple[int, float, float]] = field(default_factory=dict)
    price_requests: int = 0
    price_errors: list[str] = field(default_factory=list)
    #: the time the open spans were measured to (the API's clock when it sent a ``Date``).
    now_ms: int = 0


def sweep_function(group_by: str, separator: str = "-") -> Callable[[Attachment], str]:
    if group_by == "wandb_group":
        return lambda a: a.wandb_group or "(none)"
    if group_by == "name_prefix":
        return lambda a: sweep_of_auto(replace(a, wandb_group=None), separator)
    if group_by == "auto":
        return lambda a: sweep_of_auto(a, separator)
    raise ValueError(f"group_by must be 'auto', 'wandb_group' or 'name_prefix', not {group_by!r}")


def run_spend(
    client: "RLSessionsClient",
    store: SpendStore,
    *,
    now_ms: int | None = None,
    created_by: str | None = None,
    sweep_of: Callable[[Attachment], str] = sweep_of_auto,
    clock: ServerClock | None = None,
) -> SpendReport:
    """One spend pass: observe, price, compute, store. Open spans are measured to ``now_ms``,
    else to the API's clock as ``clock`` saw it (as the sensors do), else to the local clock."""
    resources = list(client.list_model_resources(created_by=created_by))
    if now_ms is None:
        now_ms = (clock.last_ms if clock is not None else None) or int(time.time() * 1000)
    ids = {r.id for r in resources}
    # Every session on these resources counts, whoever created it: a share of the GPUs.
    attachments = [
        a
        for s in client.list_sessions()
        if (a := attachment(s)) is not None and a.resource_id in ids
    ]
    first_session: dict[str, int] = {}
    for a in attachments:
        first_session[a.resource_id] = min(first_session.get(a.resource_id, a.start_ms), a.start_ms)
    known = store.load_spans()
    prices = PriceCache(client)
    spans: list[ResourceSpan] = []
    for r in resources:
        span = observe_span(
            known.get(r.id), r, now_ms=now_ms, first_session_ms=first_session.get(r.id)
        )
        if span.price_per_hour is None and span.ready_from_ms is not None:
            price, currency = prices.price(r)
            span = replace(span, price_per_hour=price, currency=currency)
        spans.append(span)
    spend = compute_spend(spans, attachments, now_ms=now_ms)
    rows = [
        ResourceSpendRow(
            s,
            spend.resource_ms.get(s.resource_id, 0) / 1000,
            spend.idle_ms[s.resource_id] / 1000 if s.resource_id in spend.idle_ms else None,
            spend.resource_cost.get(s.resource_id),
            spend.idle_cost.get(s.resource_id),
        )
        for s in spans
    ]
    session_rows = [
        SessionSpendRow(
            a.session_id,
            a.resource_id,
            a.display_name,
            sweep_of(a),
            spend.session_ms[a.session_id] / 1000,
            spend.session_cost.get(a.session_id),
        )
        for a in attachments
        if a.session_id in spend.session_ms
    ]
    store.save(rows, session_rows, now_ms=now_ms)
    sweeps = dict(sweep_totals(spend, attachments, sweep_of))
    return SpendReport(spend, spans, attachments, sweeps, prices.requests, prices.errors, now_ms)


_RESOURCE_COLUMNS = {
    **dict.fromkeys(["resource_id", "status", "base_model", "ready_from"], "string"),
    **dict.fromkeys(["billed_hours", "price_per_hour", "cost", "idle_cost"], "float"),
}
_SWEEP_COLUMNS = {"sweep": "string", "sessions": "int", "billed_hours": "float", "cost": "float"}


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def spend_metadata(report: SpendReport, *, rows: int, path: str) -> dict[str, Any]:
    """Totals plus two tables the UI renders: resources by cost, sweeps by cost."""
    spend = report.spend
    ranked = sorted(report.spans, key=lambda s: -(spend.resource_cost.get(s.resource_id) or 0))
    resources = [
        (
            s.resource_id,
            s.raw_status.removeprefix("MODEL_RESOURCES_STATUS_"),
            s.base_model or "",
            _iso(s.ready_from_ms) or "",
            round(spend.resource_ms.get(s.resource_id, 0) / HOUR_MS, 4),
            s.price_per_hour,
            round(spend.resource_cost.get(s.resource_id, 0.0), 4),
            round(spend.idle_cost.get(s.resource_id, 0.0), 4),
        )
        for s in ranked[:rows]
    ]
    sweeps = [
        (k, n, round(h, 4), round(c, 4)) for k, (n, h, c) in list(report.sweeps.items())[:rows]
    ]
    return {
        "total_cost": dg.MetadataValue.float(float(round(spend.total_cost, 4))),
        "idle_cost": dg.MetadataValue.float(float(round(sum(spend.idle_cost.values()), 4))),
        "billed_hours": dg.MetadataValue.float(round(sum(spend.resource_ms.values()) / HOUR_MS, 4)),
        "billing_now": dg.MetadataValue.int(
            sum(s.ready_from_ms is not None and s.ready_until_ms is None for s in report.spans)
        ),
        "unpriced_resources": dg.MetadataValue.int(len(spend.unpriced)),
        "estimate_cost_requests": dg.MetadataValue.int(report.price_requests),
        "resources": metadata_table(_RESOURCE_COLUMNS, resources),
        "sweeps": metadata_table(_SWEEP_COLUMNS, sweeps),
        "computed_at": dg.MetadataValue.text(_iso(report.now_ms) or ""),
        "db_path": db_metadata(path),
    }
