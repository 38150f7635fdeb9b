"""Billed spans observed where the resources are seen: sensor ticks and idle-guard runs.

The spend asset prices READY time, but a span it never saw begin or end is priced wrong (a
resource READY and stopped between two spend runs was $0; one seen only once STOPPED was billed
for its STOPPING time too). So every tick of the model-resource sensor and every guard run
folds what it read into the spans (``core/spend.py``), on the API's clock. Only changed spans
are written: a quiet tick opens no database.
"""

from collections.abc import Callable, Iterable
from dataclasses import replace

import dagster as dg

from ..api.models import ModelResource
from ..core.spend import ResourceSpan, observe_span, observe_spans
from ..spend_store import SQLiteSpendStore, default_spend_db_path, expand_db_path

PriceFn = Callable[[ModelResource], tuple[float | None, str | None]]


def spend_db_location(instance: dg.DagsterInstance, db_path: str | None) -> str:
    """Where the spend tables are: ``db_path``, else the default under ``DAGSTER_HOME``."""
    return expand_db_path(db_path) if db_path else default_spend_db_path(instance.root_directory)


def record_spans(
    instance: dg.DagsterInstance,
    db_path: str | None,
    resources: Iterable[ModelResource],
    *,
    now_ms: int,
    price_of: PriceFn | None = None,
) -> list[ResourceSpan]:
    """Fold ``resources`` into their stored spans and save the changed ones (returned)."""
    resources = list(resources)
    if not resources:
        return []
    with SQLiteSpendStore(spend_db_location(instance, db_path)) as store:
        changed = observe_spans(store.load_spans(), resources, now_ms=now_ms, price_of=price_of)
        if changed:
            store.save_spans(changed, now_ms=now_ms)
    return changed


def record_stop(
    instance: dg.DagsterInstance,
    db_path: str | None,
    before: ModelResource,
    after: ModelResource | None,
    *,
    now_ms: int,
    price: tuple[float | None, str | None],
) -> ResourceSpan:
    """The span of a resource the guard just stopped: READY as read before the stop, ended at
    the moment STOPPING began (``after``, the stop's answer)."""
    with SQLiteSpendStore(spend_db_location(instance, db_path)) as store:
        span = observe_span(store.load_spans().get(before.id), before, now_ms=now_ms)
        if after is not None:
            span = observe_span(span, after, now_ms=now_ms)
        if span.price_per_hour is None and price[0] is not None:
            span = replace(span, price_per_hour=price[0], currency=price[1])
        store.save_spans([span], now_ms=now_ms)
    return span
