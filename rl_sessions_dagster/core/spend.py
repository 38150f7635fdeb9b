"""What the GPUs cost. A resource is billed while READY (the one assumption), shared equally by
the sessions attached at each instant; time with none is idle, so the costs add up."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from ..api.clock import to_ms
from ..api.enums import ModelResourceStatus
from ..api.models import ModelResource, TrainingSession
from .sweeps import sweep_name

HOUR_MS = 3_600_000
_BEFORE = (ModelResourceStatus.PENDING, ModelResourceStatus.CREATING)


@dataclass(frozen=True)
class ResourceSpan:
    """A resource's billed interval as far as observed (the API says neither moment)."""

    resource_id: str
    raw_status: str = ""
    base_model: str | None = None
    ready_from_ms: int | None = None
    ready_until_ms: int | None = None
    source: str = "unknown"
    price_per_hour: float | None = None
    currency: str | None = None

    def billed_ms(self, now_ms: int) -> int:
        if self.ready_from_ms is None:
            return 0
        end = self.ready_until_ms if self.ready_until_ms is not None else now_ms
        return max(0, end - self.ready_from_ms)


def observe_span(
    previous: ResourceSpan | None,
    resource: ModelResource,
    *,
    now_ms: int,
    first_session_ms: int | None = None,
) -> ResourceSpan:
    """First seen READY, the span starts at ``updated_at``; then in another status, it ends at
    ``updated_at``. Never seen READY but a session ran on it: it starts at ``first_session_ms``."""
    span = previous or ResourceSpan(resource.id)
    span = replace(span, raw_status=resource.raw_status, base_model=resource.base_model)
    updated = to_ms(resource.updated_at)
    status = resource.status
    if status is ModelResourceStatus.READY:
        if span.ready_from_ms is None:
            source = "updated_at" if updated is not None else "observed"
            start = updated if updated is not None else now_ms
            span = replace(span, ready_from_ms=start, source=source)
        return replace(span, ready_until_ms=None)
    if status in _BEFORE and span.ready_from_ms is None:
        return span
    # Any other status (STOPPING, STOPPED, ERROR, unknown) ends the span when it began.
    if span.ready_from_ms is None and first_session_ms is not None:
        span = replace(span, ready_from_ms=first_session_ms, source="first_session")
    if span.ready_from_ms is not None and span.ready_until_ms is None:
        end = updated if updated is not None else now_ms
        span = replace(span, ready_until_ms=max(end, span.ready_from_ms))
    return span


def observe_spans(
    known: Mapping[str, ResourceSpan],
    resources: Iterable[ModelResource],
    *,
    now_ms: int,
    price_of: Callable[[ModelResource], tuple[float | None, str | None]] | None = None,
) -> list[ResourceSpan]:
    """The spans that ``resources`` change; ``price_of`` prices one that begins billing."""
    changed = []
    for r in resources:
        before = known.get(r.id)
        span = observe_span(before, r, now_ms=now_ms)
        if span.price_per_hour is None and span.ready_from_ms is not None and price_of:
            price, currency = price_of(r)
            span = replace(span, price_per_hour=price, currency=currency)
        if span != before and (before is not None or span.ready_from_ms is not None):
            changed.append(span)
    return changed


@dataclass(frozen=True)
class Attachment:
    """A session's time on a resource (``end_ms`` None until terminal)."""

    session_id: str
    resource_id: str
    start_ms: int
    end_ms: int | None = None
    display_name: str | None = None
    wandb_group: str | None = None


def attachment(session: TrainingSession) -> Attachment | None:
    """created_at to the last update once terminal."""
    start = to_ms(session.created_at)
    if session.model_resources_id is None or start is None:
        return None
    end = to_ms(session.updated_at) if session.is_terminal else None
    group = session.metadata.wandb.group if session.metadata.wandb else None
    return Attachment(
        session.id, session.model_resources_id, start, end, session.display_name, group
    )


@dataclass
class Spend:
    session_ms: dict[str, float] = field(default_factory=dict)
    session_cost: dict[str, float] = field(default_factory=dict)
    idle_ms: dict[str, float] = field(default_factory=dict)
    idle_cost: dict[str, float] = field(default_factory=dict)
    resource_ms: dict[str, int] = field(default_factory=dict)
    resource_cost: dict[str, float] = field(default_factory=dict)
    #: billed without a known price (left out of every cost)
    unpriced: list[str] = field(default_factory=list)

    @property
    def total_cost(self) -> float:
        return sum(self.resource_cost.values())


def compute_spend(
    spans: Iterable[ResourceSpan], attachments: Iterable[Attachment], *, now_ms: int
) -> Spend:
    """Split each billed interval between the sessions attached at each instant."""
    by_resource: dict[str, list[Attachment]] = {}
    for a in attachments:
        by_resource.setdefault(a.resource_id, []).append(a)
    out = Spend()
    for span in spans:
        billed = span.billed_ms(now_ms)
        out.resource_ms[span.resource_id] = billed
        price = span.price_per_hour
        if price is None and billed:
            out.unpriced.append(span.resource_id)
        elif price is not None:
            out.resource_cost[span.resource_id] = billed / HOUR_MS * price
        if (lo := span.ready_from_ms) is None:
            continue
        shares, idle = _split(lo, lo + billed, by_resource.get(span.resource_id, []), now_ms)
        out.idle_ms[span.resource_id] = idle
        if price is not None:
            out.idle_cost[span.resource_id] = idle / HOUR_MS * price
        for sid, ms in shares.items():
            out.session_ms[sid] = out.session_ms.get(sid, 0.0) + ms
            if price is not None:
                out.session_cost[sid] = out.session_cost.get(sid, 0.0) + ms / HOUR_MS * price
    return out


def _split(
    lo: int, hi: int, attached: Sequence[Attachment], now_ms: int
) -> tuple[dict[str, float], float]:
    """Sweep [lo, hi): (session shares, idle ms)."""
    points = {lo, hi}
    clipped = []
    for a in attached:
        start = max(a.start_ms, lo)
        end = min(a.end_ms if a.end_ms is not None else now_ms, hi)
        if end > start:
            clipped.append((a.session_id, start, end))
            points.update((start, end))
    ordered = sorted(p for p in points if lo <= p <= hi)
    shares: dict[str, float] = {}
    idle = 0.0
    for t0, t1 in pairwise(ordered):
        active = [sid for sid, s, e in clipped if s <= t0 and e >= t1]
        for sid in active:
            shares[sid] = shares.get(sid, 0.0) + (t1 - t0) / len(active)
        idle += 0 if active else t1 - t0
    return shares, idle


def sweep_of_auto(a: Attachment, separator: str = "-") -> str:  # as the champion sees it
    return sweep_name(a.wandb_group, a.display_name, separator)


def sweep_totals(
    spend: Spend,
    attachments: Iterable[Attachment],
    sweep_of: Callable[[Attachment], str] = sweep_of_auto,
) -> Mapping[str, tuple[int, float, float]]:
    """Per sweep: (sessions, billed hours, cost), biggest cost first."""
    totals: dict[str, list[float]] = {}
    for a in attachments:
        if a.session_id not in spend.session_ms:
            continue
        row = totals.setdefault(sweep_of(a), [0, 0.0, 0.0])
        row[0] += 1
        row[1] += spend.session_ms[a.session_id] / HOUR_MS
        row[2] += spend.session_cost.get(a.session_id, 0.0)
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][2], kv[0]))
    return {k: (int(v[0]), v[1], v[2]) for k, v in ranked}
