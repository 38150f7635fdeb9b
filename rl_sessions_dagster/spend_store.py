"""Where the spend asset keeps what the API does not: each resource's observed billed span.

Two tables, by default in the sync's SQLite file (``<DAGSTER_HOME>/together_rl_sync.sqlite``,
so they join ``rl_sessions``):
``rl_resource_spend`` (one row per model resource: status, billed span, its source, price,
billed seconds and estimated cost) and ``rl_session_spend`` (one row per session: resource,
display name, sweep, billed seconds and cost). Spans are read back at the next run, so the
READY time observed once is never lost. No Dagster here.
"""

import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .core.spend import ResourceSpan

#: The file under ``DAGSTER_HOME`` that the sync and spend tables share by default.
DEFAULT_TABLES_FILENAME = "together_rl_sync.sqlite"


def default_spend_db_path(dagster_home: str) -> str:
    return os.path.join(dagster_home, DEFAULT_TABLES_FILENAME)


def expand_db_path(path: str) -> str:
    return path if path == ":memory:" else os.path.expanduser(os.path.expandvars(path))


SPEND_SCHEMA = """
CREATE TABLE IF NOT EXISTS rl_resource_spend (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    base_model TEXT,
    ready_from_ms INTEGER,
    ready_until_ms INTEGER,
    span_source TEXT NOT NULL,
    price_per_hour REAL,
    currency TEXT,
    billed_seconds REAL NOT NULL,
    idle_seconds REAL,
    cost REAL,
    idle_cost REAL,
    computed_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rl_session_spend (
    session_id TEXT PRIMARY KEY,
    model_resources_id TEXT NOT NULL,
    display_name TEXT,
    sweep TEXT NOT NULL,
    billed_seconds REAL NOT NULL,
    cost REAL,
    computed_at_ms INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class ResourceSpendRow:
    span: ResourceSpan
    billed_seconds: float
    idle_seconds: float | None
    cost: float | None
    idle_cost: float | None


@dataclass(frozen=True)
class SessionSpendRow:
    session_id: str
    model_resources_id: str
    display_name: str | None
    sweep: str
    billed_seconds: float
    cost: float | None


class SQLiteSpendStore:
    """Spans and spend rows in SQLite (WAL, one transaction per save)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=timeout)
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(SPEND_SCHEMA)

    def __enter__(self) -> "SQLiteSpendStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def load_spans(self) -> dict[str, ResourceSpan]:
        rows = self._conn.execute(
            "SELECT id, status, base_model, ready_from_ms, ready_until_ms, span_source, "
            "price_per_hour, currency FROM rl_resource_spend"
        ).fetchall()
        return {r[0]: ResourceSpan(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows}

    def save_spans(self, spans: Iterable[ResourceSpan], *, now_ms: int) -> None:
        """Upsert the observed span of each resource, leaving the cost columns of an existing
        row as the last spend run computed them (sensor ticks and guard runs call this)."""
        with self._conn:
            self._conn.executemany(
                "INSERT INTO rl_resource_spend (id, status, base_model, ready_from_ms, "
                "ready_until_ms, span_source, price_per_hour, currency, billed_seconds, "
                "computed_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT(id) DO UPDATE "
                "SET status = excluded.status, base_model = excluded.base_model, "
                "ready_from_ms = excluded.ready_from_ms, ready_until_ms = excluded.ready_until_ms, "
                "span_source = excluded.span_source, price_per_hour = excluded.price_per_hour, "
                "currency = excluded.currency",
                [
                    (
                        s.resource_id,
                        s.raw_status,
                        s.base_model,
                        s.ready_from_ms,
                        s.ready_until_ms,
                        s.source,
                        s.price_per_hour,
                        s.currency,
                        now_ms,
                    )
                    for s in spans
                ],
            )

    def save(
        self,
        resources: Sequence[ResourceSpendRow],
        sessions: Iterable[SessionSpendRow],
        *,
        now_ms: int,
    ) -> None:
        with self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO rl_resource_spend VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.span.resource_id,
                        r.span.raw_status,
                        r.span.base_model,
                        r.span.ready_from_ms,
                        r.span.ready_until_ms,
                        r.span.source,
                        r.span.price_per_hour,
                        r.span.currency,
                        r.billed_seconds,
                        r.idle_seconds,
                        r.cost,
                        r.idle_cost,
                        now_ms,
                    )
                    for r in resources
                ],
            )
            self._conn.executemany(
                "INSERT OR REPLACE INTO rl_session_spend VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        s.session_id,
                        s.model_resources_id,
                        s.display_name,
                        s.sweep,
                        s.billed_seconds,
                        s.cost,
                        now_ms,
                    )
                    for s in sessions
                ],
            )

    def close(self) -> None:
        self._conn.close()
