"""The default store: one SQLite file next to the Dagster instance.

* Upserts are idempotent (``INSERT ... ON CONFLICT(id) DO UPDATE``) and the update only fires
  when a column other than ``synced_at`` changed, so a second sync of an unchanged account
  writes nothing and the store can report inserted / updated / unchanged rows for free
  (``Connection.total_changes`` counts only rows really written).
* ``synced_at`` is therefore the time a sync last *wrote* the row (insert or change), not the
  time it last saw it: refreshing it on every run would turn every row into an "update".
* One ``executemany`` per batch, in one transaction; WAL mode so readers (a notebook, the
  Dagster UI's metadata queries) are not blocked while a sync writes.
"""

import operator
import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from .rows import (
    SCHEMA_VERSION,
    CheckpointRow,
    SessionRow,
    StoreCounts,
    UpsertResult,
    iso_utc,
)

__all__ = ["SQLiteSessionStore"]


_SESSIONS_DDL = """
CREATE TABLE IF NOT EXISTS rl_sessions (
    id TEXT PRIMARY KEY,
    display_name TEXT,
    status TEXT NOT NULL,
    raw_status TEXT NOT NULL,
    base_model TEXT,
    model_resources_id TEXT,
    created_by TEXT,
    created_at TEXT,
    updated_at TEXT,
    step INTEGER,
    error_code TEXT,
    error_message TEXT,
    wandb_url TEXT,
    wandb_project TEXT,
    n_inference_checkpoints INTEGER NOT NULL,
    synced_at TEXT NOT NULL,
    missing_since TEXT
)"""

_CHECKPOINTS_DDL = """
CREATE TABLE IF NOT EXISTS rl_checkpoints (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    type TEXT NOT NULL,
    step INTEGER,
    created_at TEXT,
    base_model TEXT,
    model_id TEXT,
    model_revision_id TEXT,
    adapter_id TEXT,
    adapter_revision_id TEXT,
    legacy_model_name TEXT,
    registered INTEGER NOT NULL,
    synced_at TEXT NOT NULL
)"""

_INDEXES = (
    "CREATE INDEX IF NOT EXISTS rl_sessions_status ON rl_sessions(status)",
    "CREATE INDEX IF NOT EXISTS rl_sessions_created_at ON rl_sessions(created_at)",
    "CREATE INDEX IF NOT EXISTS rl_checkpoints_session ON rl_checkpoints(session_id)",
)


def _upsert_sql(table: str, columns: Sequence[str]) -> str:
    """An upsert that rewrites a row only when a data column differs (``IS NOT``: NULL-safe)."""
    data = [c for c in columns if c not in ("id", "synced_at")]
    sets = ", ".join(f"{c} = excluded.{c}" for c in (*data, "synced_at"))
    changed = " OR ".join(f"{table}.{c} IS NOT excluded.{c}" for c in data)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)}) "
        f"ON CONFLICT(id) DO UPDATE SET {sets} WHERE {changed}"
    )


_SESSION_COLUMNS = tuple(f.name for f in fields(SessionRow))
_CHECKPOINT_COLUMNS = tuple(f.name for f in fields(CheckpointRow))
#: Row → parameter tuple. Not ``dataclasses.astuple``: it deep-copies every field (8x slower).
_SESSION_VALUES = operator.attrgetter(*_SESSION_COLUMNS)
_CHECKPOINT_VALUES = operator.attrgetter(*_CHECKPOINT_COLUMNS)
_SESSION_UPSERT = _upsert_sql("rl_sessions", _SESSION_COLUMNS)
_CHECKPOINT_UPSERT = _upsert_sql("rl_checkpoints", _CHECKPOINT_COLUMNS)
#: Ids looked up per ``SELECT ... IN (...)``; far below SQLite's variable limit (999 on old builds).
_LOOKUP_CHUNK = 900


class SQLiteSessionStore:
    """The default store: one SQLite file (WAL mode), created on first use.

    ``path`` may be ``":memory:"`` (tests). The connection is opened in autocommit mode and
    every upsert call runs in its own ``BEGIN IMMEDIATE`` transaction, so a crash mid-sync
    leaves whole batches, and a concurrent sync waits (``timeout`` seconds) instead of failing.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.execute(_SESSIONS_DDL)
            self._conn.execute(_CHECKPOINTS_DDL)
            self._add_missing_columns()
            for ddl in _INDEXES:
                self._conn.execute(ddl)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _add_missing_columns(self) -> None:
        """Tables written by an older release get the columns added since (all nullable)."""
        have = {row[1] for row in self._conn.execute("PRAGMA table_info(rl_sessions)")}
        if "missing_since" not in have:
            self._conn.execute("ALTER TABLE rl_sessions ADD COLUMN missing_since TEXT")

    def __enter__(self) -> "SQLiteSessionStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self.path!r})"

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for ad-hoc queries (do not write behind the store's back)."""
        return self._conn

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult:
        return self._upsert("rl_sessions", _SESSION_UPSERT, _SESSION_VALUES, rows)

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult:
        return self._upsert("rl_checkpoints", _CHECKPOINT_UPSERT, _CHECKPOINT_VALUES, rows)

    def _existing(self, table: str, ids: Sequence[str]) -> int:
        found = 0
        for i in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[i : i + _LOOKUP_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            (n,) = self._conn.execute(
                f"SELECT count(*) FROM {table} WHERE id IN ({marks})", chunk
            ).fetchone()
            found += n
        return found

    def _upsert(
        self,
        table: str,
        sql: str,
        values: Callable[[Any], tuple[Any, ...]],
        rows: Iterable[SessionRow] | Iterable[CheckpointRow],
    ) -> UpsertResult:
        # Last row wins for a repeated id, so the counts below describe distinct rows.
        by_id = {row.id: row for row in rows}
        if not by_id:
            return UpsertResult()
        ids = list(by_id)
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            existing = self._existing(table, ids)
            before = conn.total_changes
            conn.executemany(sql, map(values, by_id.values()))
            written = conn.total_changes - before
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        inserted = len(ids) - existing
        updated = written - inserted
        return UpsertResult(inserted, updated, len(ids) - inserted - updated)

    def mark_missing(self, seen_ids: Collection[str], at: datetime) -> int:
        """Flag live rows whose id the last complete sync did not list (one transaction)."""
        seen = set(seen_ids)
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            live = [
                row[0]
                for row in conn.execute("SELECT id FROM rl_sessions WHERE missing_since IS NULL")
            ]
            gone = [sid for sid in live if sid not in seen]
            conn.executemany(
                "UPDATE rl_sessions SET missing_since = ? WHERE id = ?",
                ((iso_utc(at), sid) for sid in gone),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return len(gone)

    def counts(self) -> StoreCounts:
        conn = self._conn
        (sessions,) = conn.execute("SELECT count(*) FROM rl_sessions").fetchone()
        (checkpoints,) = conn.execute("SELECT count(*) FROM rl_checkpoints").fetchone()
        by_status = dict(
            conn.execute(
                "SELECT status, count(*) FROM rl_sessions GROUP BY status ORDER BY status"
            ).fetchall()
        )
        (missing,) = conn.execute(
            "SELECT count(*) FROM rl_sessions WHERE missing_since IS NOT NULL"
        ).fetchone()
        return StoreCounts(sessions, checkpoints, by_status, missing)

    def close(self) -> None:
        self._conn.close()
