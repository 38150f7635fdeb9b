"""The sync tables in any database SQLAlchemy reaches (PostgreSQL tested for real).

Same tables, columns and contract as :class:`~rl_sessions_dagster.storage.SQLiteSessionStore`:
idempotent upserts that write only rows whose content changed, one transaction per call, and
inserted / updated / unchanged counts. Portable by construction: each batch reads the stored
rows of its ids, compares them in Python and writes only new rows (``INSERT``) and changed rows
(``UPDATE``), so no dialect-specific upsert syntax is needed, and the counts are exact.

The URL usually carries a password. It never leaves this module in clear: ``repr``, errors and
everything the sync asset logs or records use :func:`redact_url`, and database errors are
re-raised as :class:`SessionStoreError` with the driver's message scrubbed and the statement's
parameters hidden.
"""

import importlib.util
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, make_url

from .rows import CheckpointRow, SessionRow, StoreCounts, UpsertResult, iso_utc

__all__ = ["SQLAlchemySessionStore", "SessionStoreError", "redact_url"]

#: Ids per ``SELECT ... WHERE id IN (...)`` / ``UPDATE``: small enough for every dialect.
_CHUNK = 900
_R = TypeVar("_R")


class SessionStoreError(RuntimeError):
    """The sync database could not be reached or refused a write. Never holds a password."""


def redact_url(url: "str | URL") -> str:
    """``url`` with its password replaced by ``***`` (also for strings SQLAlchemy cannot parse)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"(//[^/:@]*):[^@/]*@", r"\1:***@", str(url))


def _driver_url(url: URL) -> URL:
    """Plain ``postgresql://`` means psycopg 3 from SQLAlchemy 2.1 on; dagster-postgres installs
    psycopg2. Use the driver that is installed, so the URL a team already has works."""
    if (
        url.drivername == "postgresql"
        and importlib.util.find_spec("psycopg") is None
        and importlib.util.find_spec("psycopg2") is not None
    ):
        return url.set(drivername="postgresql+psycopg2")
    return url


def _tables(schema: str | None) -> tuple[sa.MetaData, sa.Table, sa.Table]:
    meta = sa.MetaData(schema=schema)
    key = sa.String(255)  # bounded: usable as a key and in an index on every dialect
    sessions = sa.Table(
        "rl_sessions",
        meta,
        sa.Column("id", key, primary_key=True),
        sa.Column("display_name", sa.Text),
        sa.Column("status", sa.String(64), nullable=False, index=True),
        sa.Column("raw_status", sa.Text, nullable=False),
        sa.Column("base_model", sa.Text),
        sa.Column("model_resources_id", sa.Text),
        sa.Column("created_by", sa.Text),
        sa.Column("created_at", sa.String(64), index=True),
        sa.Column("updated_at", sa.String(64)),
        sa.Column("step", sa.BigInteger),
        sa.Column("error_code", sa.Text),
        sa.Column("error_message", sa.Text),
        sa.Column("wandb_url", sa.Text),
        sa.Column("wandb_project", sa.Text),
        sa.Column("n_inference_checkpoints", sa.Integer, nullable=False),
        sa.Column("synced_at", sa.String(64), nullable=False),
        sa.Column("missing_since", sa.String(64)),
    )
    checkpoints = sa.Table(
        "rl_checkpoints",
        meta,
        sa.Column("id", key, primary_key=True),
        sa.Column("session_id", key, nullable=False, index=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("step", sa.BigInteger),
        sa.Column("created_at", sa.String(64)),
        sa.Column("base_model", sa.Text),
        sa.Column("model_id", sa.Text),
        sa.Column("model_revision_id", sa.Text),
        sa.Column("adapter_id", sa.Text),
        sa.Column("adapter_revision_id", sa.Text),
        sa.Column("legacy_model_name", sa.Text),
        sa.Column("registered", sa.Integer, nullable=False),
        sa.Column("synced_at", sa.String(64), nullable=False),
    )
    return meta, sessions, checkpoints


_SESSION_COLUMNS = tuple(f.name for f in fields(SessionRow))
_CHECKPOINT_COLUMNS = tuple(f.name for f in fields(CheckpointRow))
#: Columns added after the first release: added to an existing table on open.
_ADDED_COLUMNS = {"rl_sessions": ("missing_since",)}


def _chunks(items: Sequence[_R]) -> Iterator[Sequence[_R]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


class SQLAlchemySessionStore:
    """A :class:`~rl_sessions_dagster.storage.SessionStore` on a SQLAlchemy URL.

    Example: ``SQLAlchemySessionStore("postgresql+psycopg2://sync:PASSWORD@db:5432/analytics")``.
    Tables are created on first use (in ``schema`` if given). Each call takes a pooled
    connection (checked with a ping, so a restarted database is reconnected) and runs in one
    transaction. ``connect_timeout`` (seconds) bounds a connection attempt on PostgreSQL.
    """

    def __init__(
        self,
        url: "str | URL",
        *,
        schema: str | None = None,
        connect_timeout: float = 10.0,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        try:
            parsed = _driver_url(make_url(url))
        except Exception as exc:  # the message may quote the URL: say only what kind it is
            raise SessionStoreError(
                f"not a SQLAlchemy database URL: {redact_url(url)} ({type(exc).__name__})"
            ) from None
        self.url = parsed
        self._password = parsed.password if isinstance(parsed.password, str) else None
        options: dict[str, Any] = {"pool_pre_ping": True, "hide_parameters": True}
        if parsed.get_backend_name() == "postgresql":
            options["connect_args"] = {"connect_timeout": max(1, int(connect_timeout))}
        options.update(engine_options or {})
        self._engine = self._guard("opening it", lambda: sa.create_engine(parsed, **options))
        self._meta, self._sessions, self._checkpoints = _tables(schema)
        self._guard("creating its tables", self._create_tables)

    def __repr__(self) -> str:
        return f"SQLAlchemySessionStore({redact_url(self.url)!r})"

    def __enter__(self) -> "SQLAlchemySessionStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def engine(self) -> sa.Engine:
        """The engine, for ad-hoc reads (do not write behind the store's back)."""
        return self._engine

    # --- errors ---------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        if self._password:
            text = text.replace(self._password, "***")
        return text

    def _guard(self, action: str, fn: Callable[[], _R]) -> _R:
        """Run ``fn``; database errors become a :class:`SessionStoreError` naming the redacted
        URL. ``from None``: the driver's exception chain is not carried along."""
        try:
            return fn()
        except sa.exc.SQLAlchemyError as exc:
            orig = getattr(exc, "orig", None) or exc
            detail = " ".join(str(orig).split())  # one line; no statement, no parameters
            unreachable = isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
            what = "cannot reach" if unreachable else "error from"
            raise SessionStoreError(
                self._scrub(
                    f"{what} the sync database {redact_url(self.url)} while {action} (nothing "
                    f"of this call was written): {type(orig).__name__}: {detail}"
                )
            ) from None

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        with self._engine.begin() as conn:
            yield conn

    # --- schema ---------------------------------------------------------------------------------

    def _create_tables(self) -> None:
        with self._begin() as conn:
            self._meta.create_all(conn)
            inspector = sa.inspect(conn)
            for table in (self._sessions, self._checkpoints):
                have = {c["name"] for c in inspector.get_columns(table.name, schema=table.schema)}
                for name in _ADDED_COLUMNS.get(table.name, ()):
                    if name not in have:
                        column = table.c[name]
                        ddl = column.type.compile(dialect=conn.dialect)
                        target = conn.dialect.identifier_preparer.format_table(table)
                        conn.execute(sa.text(f"ALTER TABLE {target} ADD COLUMN {name} {ddl}"))

    # --- writes ---------------------------------------------------------------------------------

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult:
        return self._guard(
            "writing rl_sessions", lambda: self._upsert(self._sessions, _SESSION_COLUMNS, rows)
        )

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult:
        return self._guard(
            "writing rl_checkpoints",
            lambda: self._upsert(self._checkpoints, _CHECKPOINT_COLUMNS, rows),
        )

    def _upsert(
        self,
        table: sa.Table,
        columns: Sequence[str],
        rows: Sequence[SessionRow] | Sequence[CheckpointRow],
    ) -> UpsertResult:
        # Last row wins for a repeated id, so the counts describe distinct rows.
        by_id = {row.id: row for row in rows}
        if not by_id:
            return UpsertResult()
        data = [c for c in columns if c not in ("id", "synced_at")]
        selected = [table.c.id, *(table.c[c] for c in data)]
        new: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        with self._begin() as conn:
            stored: dict[str, tuple[Any, ...]] = {}
            for chunk in _chunks(list(by_id)):
                for rec in conn.execute(sa.select(*selected).where(table.c.id.in_(chunk))):
                    stored[rec[0]] = tuple(rec[1:])
            for rid, row in by_id.items():
                values = {c: getattr(row, c) for c in columns}
                before = stored.get(rid)
                if before is None:
                    new.append(values)
                elif before != tuple(values[c] for c in data):
                    values["_id"] = values.pop("id")
                    changed.append(values)
            if new:
                conn.execute(sa.insert(table), new)
            if changed:
                conn.execute(sa.update(table).where(table.c.id == sa.bindparam("_id")), changed)
        return UpsertResult(len(new), len(changed), len(by_id) - len(new) - len(changed))

    def mark_missing(self, seen_ids: Collection[str], at: datetime) -> int:
        """Flag live rows whose id the last complete sync did not list (one transaction)."""
        return self._guard("marking missing sessions", lambda: self._mark_missing(seen_ids, at))

    def _mark_missing(self, seen_ids: Collection[str], at: datetime) -> int:
        seen = set(seen_ids)
        table = self._sessions
        with self._begin() as conn:
            live = conn.execute(sa.select(table.c.id).where(table.c.missing_since.is_(None)))
            gone = [rid for (rid,) in live if rid not in seen]
            for chunk in _chunks(gone):
                conn.execute(
                    sa.update(table).where(table.c.id.in_(chunk)).values(missing_since=iso_utc(at))
                )
        return len(gone)

    # --- reads ----------------------------------------------------------------------------------

    def counts(self) -> StoreCounts:
        return self._guard("counting rows", self._counts)

    def _counts(self) -> StoreCounts:
        s, c = self._sessions, self._checkpoints
        with self._begin() as conn:
            sessions = conn.execute(sa.select(sa.func.count()).select_from(s)).scalar_one()
            checkpoints = conn.execute(sa.select(sa.func.count()).select_from(c)).scalar_one()
            by_status = {
                status: n
                for status, n in conn.execute(
                    sa.select(s.c.status, sa.func.count()).group_by(s.c.status).order_by(s.c.status)
                )
            }
            missing = conn.execute(
                sa.select(sa.func.count()).select_from(s).where(s.c.missing_since.is_not(None))
            ).scalar_one()
        return StoreCounts(sessions, checkpoints, by_status, missing)

    def close(self) -> None:
        self._engine.dispose()
