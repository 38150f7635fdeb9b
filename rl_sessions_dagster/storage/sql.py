"""The one table store: what it reads and writes in every table of the library (sessions and
checkpoints for the sync, spend for the spend asset and the GPU sensors)."""

import operator
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.spend import ResourceSpan
from .engine import TableDatabase, id_chunks
from .rows import (
    CheckpointRow,
    ResourceSpendRow,
    SessionRow,
    SessionSpendRow,
    StoreCounts,
    UpsertResult,
    iso_utc,
)

_SESSION_COLUMNS = tuple(f.name for f in fields(SessionRow))
_CHECKPOINT_COLUMNS = tuple(f.name for f in fields(CheckpointRow))
#: ``rl_resource_spend``'s span columns and the :class:`ResourceSpan` attribute each holds.
_SPAN_COLUMNS = {
    "status": "raw_status",
    "base_model": "base_model",
    "ready_from_ms": "ready_from_ms",
    "ready_until_ms": "ready_until_ms",
    "span_source": "source",
    "price_per_hour": "price_per_hour",
    "currency": "currency",
}


def _span_values(span: ResourceSpan) -> dict[str, Any]:
    return {column: getattr(span, attr) for column, attr in _SPAN_COLUMNS.items()}


class SQLAlchemyTableStore(TableDatabase):
    """Every table of the library on one database URL or SQLite file path, e.g.
    ``SQLAlchemyTableStore("postgresql://rl:PASSWORD@db:5432/analytics", schema="together_rl")``.
    """

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult:
        with self._transaction("writing rl_sessions") as conn:
            return self._upsert(conn, self._tables.sessions, _SESSION_COLUMNS, rows)

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult:
        with self._transaction("writing rl_checkpoints") as conn:
            return self._upsert(conn, self._tables.checkpoints, _CHECKPOINT_COLUMNS, rows)

    def _upsert(
        self,
        conn: Connection,
        table: sa.Table,
        columns: Sequence[str],
        rows: Sequence[SessionRow] | Sequence[CheckpointRow],
    ) -> UpsertResult:
        # Last row wins for a repeated id, so the counts describe distinct rows.
        values = operator.attrgetter(*columns)  # not dataclasses.asdict: it deep-copies (8x)
        by_id = {row.id: dict(zip(columns, values(row), strict=True)) for row in rows}
        new, changed = self._write(conn, table, "id", by_id, ignore=("synced_at",))
        return UpsertResult(new, changed, len(by_id) - new - changed)

    def mark_missing(self, seen_ids: Collection[str], at: datetime) -> int:
        """Flag live rows whose id the last complete sync did not list."""
        with self._transaction("marking missing sessions") as conn:
            t, seen = self._tables.sessions, set(seen_ids)
            live = conn.scalars(sa.select(t.c.id).where(t.c.missing_since.is_(None)))
            return self._mark(conn, [rid for rid in live if rid not in seen], at)

    def mark_sessions_missing(self, ids: Collection[str], at: datetime) -> int:
        """Flag these live rows (a session fetched by id answered 404)."""
        with self._transaction("marking missing sessions") as conn:
            return self._mark(conn, sorted(set(ids)), at)

    def _mark(self, conn: Connection, ids: Sequence[str], at: datetime) -> int:
        t, n = self._tables.sessions, 0
        for chunk in id_chunks(ids):
            live = sa.and_(t.c.id.in_(chunk), t.c.missing_since.is_(None))
            n += conn.execute(sa.update(t).where(live).values(missing_since=iso_utc(at))).rowcount
        return n

    def load_sync_state(self, key: str) -> str | None:
        """The state the last completed sync run of ``key`` saved, if any."""
        with self._transaction("reading rl_sync_state") as conn:
            t = self._tables.sync_state
            return conn.execute(sa.select(t.c.state).where(t.c.key == key)).scalar()

    def save_sync_state(self, key: str, state: str, mode: str, at: datetime) -> None:
        """Replace ``key``'s state; called only once the run's rows are written."""
        with self._transaction("writing rl_sync_state") as conn:
            values = {"state": state, "mode": mode, "saved_at": iso_utc(at)}
            self._write(conn, self._tables.sync_state, "key", {key: values})

    def counts(self) -> StoreCounts:
        with self._transaction("counting rows") as conn:
            s, c = self._tables.sessions, self._tables.checkpoints
            sessions = conn.execute(sa.select(sa.func.count()).select_from(s)).scalar_one()
            checkpoints = conn.execute(sa.select(sa.func.count()).select_from(c)).scalar_one()
            grouped = sa.select(s.c.status, sa.func.count()).group_by(s.c.status)
            by_status: dict[str, int] = dict(
                conn.execute(grouped.order_by(s.c.status)).tuples().all()
            )
            missing = conn.execute(
                sa.select(sa.func.count()).select_from(s).where(s.c.missing_since.is_not(None))
            ).scalar_one()
            return StoreCounts(sessions, checkpoints, by_status, missing)

    def load_spans(self) -> dict[str, ResourceSpan]:
        with self._transaction("reading rl_resource_spend") as conn:
            t = self._tables.resource_spend
            rows = conn.execute(sa.select(t.c.id, *(t.c[c] for c in _SPAN_COLUMNS))).all()
            return {r[0]: ResourceSpan(*r) for r in rows}  # the columns in the span's field order

    def load_session_spend(self, session_id: str) -> tuple[float, float | None, str] | None:
        """One session's spend row (billed seconds, cost, sweep), if a spend run wrote it."""
        with self._transaction("reading rl_session_spend") as conn:
            t = self._tables.session_spend
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
        """Write these resources' and sessions' spend rows whole."""
        with self._transaction("writing the spend tables") as conn:
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
            by_session = {s.session_id: {**asdict(s), "computed_at_ms": now_ms} for s in sessions}
            self._write(conn, self._tables.resource_spend, "id", by_resource)
            self._write(conn, self._tables.session_spend, "session_id", by_session)

    def save_spans(self, spans: Iterable[ResourceSpan], *, now_ms: int) -> None:
        """Upsert only the span columns, for sensors that observe spans between spend runs: billed
        and cost columns stay as the last spend run wrote them (a new row starts at 0)."""
        with self._transaction("writing rl_resource_spend spans") as conn:
            values = {s.resource_id: _span_values(s) for s in spans}
            table = self._tables.resource_spend
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
