"""Billed spans folded in where the resources are seen (model-resource ticks, guard runs), on
the API's clock: the spend asset alone would price a span it never saw begin or end wrong.
Only changed spans are written: a quiet tick opens no database.
"""

from collections.abc import Callable, Iterable
from dataclasses import replace

import dagster as dg

from ..api.models import ModelResource
from ..core.spend import ResourceSpan, observe_span, observe_spans
from ..resource import TogetherRLResource
from ..resource.tables import open_table_store


def record_spans(
    resource: TogetherRLResource,
    instance: dg.DagsterInstance,
    db_path: str | None,
    resources: Iterable[ModelResource],
    *,
    now_ms: int,
    price_of: Callable[[ModelResource], tuple[float | None, str | None]] | None = None,
) -> list[ResourceSpan]:
    """Fold ``resources`` into their stored spans and save the changed ones (returned)."""
    resources = list(resources)
    if not resources:
        return []
    with open_table_store(resource, instance, db_path, url_setting="spend_db_path") as store:
        changed = observe_spans(store.load_spans(), resources, now_ms=now_ms, price_of=price_of)
        if changed:
            store.save_spans(changed, now_ms=now_ms)
    return changed


def record_stop(
    resource: TogetherRLResource,
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
    with open_table_store(resource, instance, db_path, url_setting="spend_db_path") as store:
        span = observe_span(store.load_spans().get(before.id), before, now_ms=now_ms)
        if after is not None:
            span = observe_span(span, after, now_ms=now_ms)
        if span.price_per_hour is None and price[0] is not None:
            span = replace(span, price_per_hour=price[0], currency=price[1])
        store.save_spans([span], now_ms=now_ms)
    return span
