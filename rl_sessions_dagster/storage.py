"""Where the scheduled sync keeps its copy of the RL sessions and checkpoints.

The sync asset (``assets/sync.py``) writes two flat tables that analysts can query with plain
SQL: ``rl_sessions`` (one row per training session) and ``rl_checkpoints`` (one row per
inference or training checkpoint). The :class:`SessionStore` protocol is all the asset needs,
so a team can swap the default :class:`SQLiteSessionStore` for Postgres, BigQuery, ... by
passing its own store factory.

No Dagster here: the mapping from API objects to rows and the upsert logic are testable alone.

Design notes:

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .api.models import InferenceCheckpoint, TrainingCheckpoint, TrainingSession

__all__ = [
    "CheckpointRow",
    "SQLiteSessionStore",
    "SessionRow",
    "SessionStore",
    "StoreCounts",
    "UpsertResult",
    "checkpoint_rows",
    "session_row",
]

SCHEMA_VERSION = 1


def _iso(value: datetime | None) -> str | None:
    """Timestamps are stored as ISO 8601 UTC text: sortable, and readable in any SQL client."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.isoformat()


@dataclass(frozen=True)
class SessionRow:
    """One row of ``rl_sessions``. ``status`` is the short name (``RUNNING``); ``raw_status``
    keeps the wire constant, so a status newer than this library is not lost."""

    id: str
    display_name: str | None
    status: str
    raw_status: str
    base_model: str | None
    model_resources_id: str | None
    created_by: str | None
    created_at: str | None
    updated_at: str | None
    step: int | None
    error_code: str | None
    error_message: str | None
    wandb_url: str | None
    wandb_project: str | None
    n_inference_checkpoints: int
    synced_at: str


@dataclass(frozen=True)
class CheckpointRow:
    """One row of ``rl_checkpoints``.

    For ``INFERENCE`` rows the registry columns say what to deploy (see
    ``assets/registration.py``). For ``TRAINING`` rows ``model_id``/``model_revision_id`` hold
    the registry artifact of the training state: it is for resuming, not deployable.
    """

    id: str
    session_id: str
    type: str
    step: int | None
    created_at: str | None
    base_model: str | None
    model_id: str | None
    model_revision_id: str | None
    adapter_id: str | None
    adapter_revision_id: str | None
    legacy_model_name: str | None
    registered: int
    synced_at: str


def _error_code(session: TrainingSession) -> str | None:
    """Short code (``TIMED_OUT``) when known, else the raw string the API sent."""
    error = session.error
    if error is None or error.code is None:
        return None
    return error.code_raw if error.code.name == "UNKNOWN" else error.code.short


def session_row(session: TrainingSession, synced_at: datetime) -> SessionRow:
    """The ``rl_sessions`` row of a session as the API returned it."""
    wandb = session.metadata.wandb
    error = session.error
    return SessionRow(
        id=session.id,
        display_name=session.display_name,
        status=session.status.short,
        raw_status=session.raw_status,
        base_model=session.base_model,
        model_resources_id=session.model_resources_id,
        created_by=session.created_by,
        created_at=_iso(session.created_at),
        updated_at=_iso(session.updated_at),
        step=session.step,
        error_code=_error_code(session),
        error_message=error.message if error is not None else None,
        wandb_url=wandb.url if wandb is not None else None,
        wandb_project=wandb.project if wandb is not None else None,
        n_inference_checkpoints=len(session.inference_checkpoints),
        synced_at=_iso(synced_at) or "",
    )


def _inference_row(
    session: TrainingSession, ck: InferenceCheckpoint, synced_at: str
) -> CheckpointRow:
    reg = ck.registration
    return CheckpointRow(
        id=ck.id,
        session_id=session.id,
        type="INFERENCE",
        step=ck.step,
        created_at=_iso(ck.created_at),
        base_model=session.base_model,
        model_id=reg.model_id if reg else None,
        model_revision_id=reg.model_revision_id if reg else None,
        adapter_id=reg.adapter_id if reg else None,
        adapter_revision_id=reg.adapter_revision_id if reg else None,
        legacy_model_name=reg.legacy_model_name if reg else None,
        registered=int(ck.is_registered),
        synced_at=synced_at,
    )


def _training_row(
    session: TrainingSession, ck: TrainingCheckpoint, synced_at: str
) -> CheckpointRow:
    reg = ck.registration
    return CheckpointRow(
        id=ck.id,
        session_id=session.id,
        type="TRAINING",
        step=ck.step,
        created_at=_iso(ck.created_at),
        base_model=session.base_model,
        model_id=reg.id if reg else None,
        model_revision_id=reg.revision_id if reg else None,
        adapter_id=None,
        adapter_revision_id=None,
        legacy_model_name=None,
        registered=int(bool(reg and reg.id)),
        synced_at=synced_at,
    )


def checkpoint_rows(
    session: TrainingSession, synced_at: datetime, *, include_training: bool = True
) -> list[CheckpointRow]:
    """The ``rl_checkpoints`` rows of the checkpoints a session embeds (no extra request)."""
    at = _iso(synced_at) or ""
    rows = [_inference_row(session, ck, at) for ck in session.inference_checkpoints]
    if include_training:
        rows.extend(_training_row(session, ck, at) for ck in session.training_checkpoints)
    return rows


@dataclass
class UpsertResult:
    """Rows written by one or more upserts. ``unchanged`` rows were already identical."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def written(self) -> int:
        return self.inserted + self.updated

    @property
    def total(self) -> int:
        return self.inserted + self.updated + self.unchanged

    def __add__(self, other: "UpsertResult") -> "UpsertResult":
        return UpsertResult(
            self.inserted + other.inserted,
            self.updated + other.updated,
            self.unchanged + other.unchanged,
        )

    def as_dict(self) -> dict[str, int]:
        return {"inserted": self.inserted, "updated": self.updated, "unchanged": self.unchanged}


@dataclass(frozen=True)
class StoreCounts:
    """Row counts of the whole store (not just the last sync)."""

    sessions: int
    checkpoints: int
    sessions_by_status: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class SessionStore(Protocol):
    """What the sync asset needs from storage. Implement it to sync somewhere else.

    ``upsert_*`` must be idempotent by ``id`` and may receive the same id twice across calls;
    rows within one call have distinct ids.
    """

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult: ...

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult: ...

    def counts(self) -> StoreCounts: ...

    def close(self) -> None: ...


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
    synced_at TEXT NOT NULL
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
            for ddl in _INDEXES:
                self._conn.execute(ddl)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

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

    def counts(self) -> StoreCounts:
        conn = self._conn
        (sessions,) = conn.execute("SELECT count(*) FROM rl_sessions").fetchone()
        (checkpoints,) = conn.execute("SELECT count(*) FROM rl_checkpoints").fetchone()
        by_status = dict(
            conn.execute(
                "SELECT status, count(*) FROM rl_sessions GROUP BY status ORDER BY status"
            ).fetchall()
        )
        return StoreCounts(sessions, checkpoints, by_status)

    def close(self) -> None:
        self._conn.close()
