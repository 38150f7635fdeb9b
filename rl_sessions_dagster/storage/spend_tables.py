"""The spend half of the table store: billed spans (``rl_resource_spend``) and each resource's
and session's spend rows (``rl_session_spend``), written by the spend asset and the GPU
sensors. A mixin of :class:`~.sql.SQLAlchemyTableStore`, which provides the connection,
the error guard and the portable write."""

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.spend import ResourceSpan
from .rows import ResourceSpendRow, SessionSpendRow
from .schema import Tables

_R = TypeVar("_R")
#: Ids per ``SELECT ... WHERE id IN (...)`` / ``UPDATE``: small enough for every dialect.
_CHUNK = 900
_SPAN_COLUMNS = (
    "status",
    "base_model",
    "ready_from_ms",
    "ready_until_ms",
    "span_source",
    "price_per_hour",
    "currency",
)


def _span_values(span: ResourceSpan) -> dict[str, Any]:
    return {
        "status": span.raw_status,
        "base_model": span.base_model,
        "ready_from_ms": span.ready_from_ms,
        "ready_until_ms": span.ready_until_ms,
        "span_source": span.source,
        "price_per_hour": span.price_per_hour,
        "currency": span.currency,
    }


def id_chunks(items: Sequence[_R]) -> Iterator[Sequence[_R]]:
    """``items`` in slices of at most ``_CHUNK`` (one ``IN (...)`` list each)."""
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


class SpendTables:
    """Reads and writes of the spend tables (needs the store's ``_tables``, ``_guard``,
    ``_begin`` and ``_write``)."""

    _tables: Tables

    def _guard(self, action: str, fn: Callable[[], _R]) -> _R:
        raise NotImplementedError

    def _begin(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    @staticmethod
    def _write(
        conn: Connection, table: sa.Table, key: str, by_id: dict[str, dict[str, Any]]
    ) -> tuple[int, int]:
        raise NotImplementedError

    def load_spans(self) -> dict[str, ResourceSpan]:
        """Every resource's stored billed span, by resource id."""
        return self._guard("reading rl_resource_spend", self._load_spans)

    def _load_spans(self) -> dict[str, ResourceSpan]:
        t = self._tables.resource_spend
        with self._begin() as conn:
            rows = conn.execute(sa.select(t.c.id, *(t.c[c] for c in _SPAN_COLUMNS))).all()
        return {r[0]: ResourceSpan(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows}

    def load_session_spend(self, session_id: str) -> tuple[float, float | None, str] | None:
        """One session's spend row (billed seconds, cost, sweep), if a spend run wrote it."""
        return self._guard("reading rl_session_spend", lambda: self._load_session(session_id))

    def _load_session(self, session_id: str) -> tuple[float, float | None, str] | None:
        t = self._tables.session_spend
        with self._begin() as conn:
            row = conn.execute(
                sa.select(t.c.billed_seconds, t.c.cost, t.c.sweep).where(
                    t.c.session_id == session_id
                )
            ).first()
        return None if row is None else (float(row[0]), row[1], str(row[2]))

    def save(
        self,
        resources: Sequence[ResourceSpendRow],
        sessions: Iterable[SessionSpendRow],
        *,
        now_ms: int,
    ) -> None:
        """Write these resources' and sessions' spend rows whole, in one transaction."""
        by_resource = {
            r.span.resource_id: {
                **_span_values(r.span),
                "billed_seconds": r.billed_seconds,
                "idle_seconds": r.idle_seconds,
                "cost": r.cost,
                "idle_cost": r.idle_cost,
                "computed_at_ms": now_ms,
            }
            for r in resources
        }
        by_session = {
            s.session_id: {
                "model_resources_id": s.model_resources_id,
                "display_name": s.display_name,
                "sweep": s.sweep,
                "billed_seconds": s.billed_seconds,
                "cost": s.cost,
                "computed_at_ms": now_ms,
            }
            for s in sessions
        }

        def write() -> None:
            with self._begin() as conn:
                self._write(conn, self._tables.resource_spend, "id", by_resource)
                self._write(conn, self._tables.session_spend, "session_id", by_session)

        self._guard("writing the spend tables", write)

    def save_spans(self, spans: Iterable[ResourceSpan], *, now_ms: int) -> None:
        """Upsert only the span columns (status, model, READY span and its source, price):
        billed and cost columns of existing rows stay as the last spend run wrote them; a new
        row starts at 0 billed seconds. For sensors that observe spans between spend runs."""
        values = {s.resource_id: _span_values(s) for s in spans}

        def write() -> None:
            table = self._tables.resource_spend
            with self._begin() as conn:
                stored: set[str] = set()
                for chunk in id_chunks(list(values)):
                    stored.update(conn.scalars(sa.select(table.c.id).where(table.c.id.in_(chunk))))
                old = {k: v for k, v in values.items() if k in stored}
                fresh = {
                    k: {**v, "billed_seconds": 0.0, "computed_at_ms": now_ms}
                    for k, v in values.items()
                    if k not in stored
                }
                self._write(conn, table, "id", old)
                self._write(conn, table, "id", fresh)

        self._guard("writing rl_resource_spend spans", write)
