"""The one table store, one transaction per call. A write reads its ids' rows, then inserts and
updates (no dialect's upsert, exact counts). SQLite: WAL, ``BEGIN IMMEDIATE``: a writer waits."""

import importlib.util
import operator
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, make_url

from ..core.spend import ResourceSpan
from .rows import (
    CheckpointRow,
    ResourceSpendRow,
    SessionRow,
    SessionSpendRow,
    StoreCounts,
    UpsertResult,
    iso_utc,
)
from .schema import define_tables, upgrade
from .urls import TableStoreConfigError, TableStoreError, check_target, is_database_url, redact_url

#: Ids per ``IN (...)`` list: small enough for every dialect.
_CHUNK = 900


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    return (items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK))


#: ``rl_resource_spend``'s span columns, in :class:`ResourceSpan` field order, to the field held.
_RENAMED = {"raw_status": "status", "source": "span_source"}
_SPAN_COLS = {_RENAMED.get(f.name, f.name): f.name for f in fields(ResourceSpan)[1:]}
#: the :class:`ResourceSpendRow` columns beside the span.
_SPEND_COLS = {c: c for c in ("billed_seconds", "idle_seconds", "cost", "idle_cost")}


def _values(obj: object, columns: dict[str, str]) -> dict[str, Any]:
    return {column: getattr(obj, attr) for column, attr in columns.items()}


class SQLAlchemyTableStore:
    """Every table of the library on one database URL or SQLite file path, e.g.
    ``SQLAlchemyTableStore("postgresql://rl:PASSWORD@db:5432/analytics", schema="together_rl")``,
    created or upgraded on open. The URL's password never shows (``repr``, :attr:`display`,
    errors). ``connect_timeout`` bounds a PostgreSQL connect, ``timeout`` SQLite's lock wait."""

    def __init__(
        self,
        url: "str | Path | URL",
        *,
        schema: str | None = None,
        setting: str = "the tables' database URL",
        connect_timeout: float = 10.0,
        timeout: float = 30.0,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        self.setting = setting
        self.url = parsed = self._parse(url)
        self._password = parsed.password if isinstance(parsed.password, str) else None
        backend = parsed.get_backend_name()
        self.schema = schema if backend != "sqlite" else None
        options: dict[str, Any] = {"pool_pre_ping": True, "hide_parameters": True}
        if backend == "postgresql":
            options["connect_args"] = {"connect_timeout": max(1, int(connect_timeout))}
        elif backend == "sqlite":
            options["connect_args"] = {"timeout": timeout}
            if not parsed.database or parsed.database == ":memory:":
                options["poolclass"] = sa.pool.StaticPool  # one connection: one database
            else:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        options.update(engine_options or {})
        with self._guard("opening it"):
            #: for ad-hoc reads (do not write behind the store's back).
            self.engine = sa.create_engine(parsed, **options)
        if backend == "sqlite":  # SQLAlchemy's recipe: every call, DDL too, is one BEGIN IMMEDIATE

            @sa.event.listens_for(self.engine, "connect")
            def _connect(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.isolation_level = None  # not pysqlite's own transactions
                if parsed.database:
                    dbapi_connection.execute("PRAGMA journal_mode=WAL")
                    dbapi_connection.execute("PRAGMA synchronous=NORMAL")

            @sa.event.listens_for(self.engine, "begin")
            def _begin(conn: Connection) -> None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        self._tables = define_tables(self.schema)
        with self._transaction("creating or upgrading its tables") as conn:
            upgrade(conn, self._tables)

    def _parse(self, url: "str | Path | URL") -> URL:
        if not isinstance(url, URL):
            text = str(url)
            check_target(text, self.setting)
            if text == ":memory:":  # a private in-memory database
                return URL.create("sqlite")
            if not is_database_url(text):
                return URL.create("sqlite", database=os.path.abspath(os.path.expanduser(text)))
            try:
                url = make_url(text)
            except Exception as exc:  # the message may quote the URL: say only what kind it is
                raise TableStoreConfigError(
                    f"{self.setting} is not a SQLAlchemy database URL: {redact_url(text)} "
                    f"({type(exc).__name__})"
                ) from None
        # Plain postgresql:// means psycopg 3 from SQLAlchemy 2.1 on, and dagster-postgres
        # installs psycopg2: the driver installed is used, so the URL a team already has works.
        if (
            url.drivername == "postgresql"
            and importlib.util.find_spec("psycopg") is None
            and importlib.util.find_spec("psycopg2") is not None
        ):
            return url.set(drivername="postgresql+psycopg2")
        return url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.display!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def display(self) -> str:
        """The file path, or the URL with ``***``."""
        if self.url.get_backend_name() == "sqlite":
            return self.url.database or ":memory:"
        shown = redact_url(self.url)
        return f"{shown} (schema {self.schema})" if self.schema else shown

    @property
    def is_file(self) -> bool:
        """A SQLite file: a process with another filesystem will not see it."""
        return self.url.get_backend_name() == "sqlite" and bool(self.url.database)

    def table(self, name: str) -> sa.Table:
        """A table by name (``rl_sessions``, ...), for ad-hoc reads."""
        return self._tables.meta.tables[f"{self.schema}.{name}" if self.schema else name]

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Database errors become :class:`TableStoreError`, ``from None`` (URLs in the chain)."""
        try:
            yield
        except (sa.exc.SQLAlchemyError, ImportError) as exc:
            orig = getattr(exc, "orig", None) or exc
            detail = " ".join(str(orig).split())  # one line; no statement, no parameters
            unreachable = isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
            what = "cannot reach" if unreachable else "error from"
            message = (
                f"{what} the tables' database {redact_url(self.url)} while {action} "
                f"(nothing of this call was written; it is set by {self.setting}): "
                f"{type(orig).__name__}: {detail}"
            )
            if self._password:
                message = message.replace(self._password, "***")
            raise TableStoreError(message) from None

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Connection]:
        with self._guard(action), self.engine.begin() as conn:
            yield conn

    @staticmethod
    def _write(
        conn: Connection,
        table: sa.Table,
        key: str,
        by_id: dict[str, dict[str, Any]],
        *,
        ignore: Collection[str] = (),
        inserted: dict[str, Any] | None = None,
    ) -> tuple[int, int]:
        """Insert new ids (+ ``inserted``), update changed ones: (new, changed); same columns."""
        if not by_id:
            return 0, 0
        data = [c for c in next(iter(by_id.values())) if c != key and c not in ignore]
        stored: dict[str, tuple[Any, ...]] = {}
        selected = [table.c[key], *(table.c[c] for c in data)]
        for chunk in _chunks(list(by_id)):
            for rec in conn.execute(sa.select(*selected).where(table.c[key].in_(chunk))):
                stored[rec[0]] = tuple(rec[1:])
        extra = inserted or {}
        new = [{key: rid, **values, **extra} for rid, values in by_id.items() if rid not in stored]
        changed = [
            {"_key": rid, **{c: v for c, v in values.items() if c != key}}
            for rid, values in by_id.items()
            if rid in stored and stored[rid] != tuple(values[c] for c in data)
        ]
        if new:
            # One executemany of a statement compiled once: SQLAlchemy's per-row parameter
            # processing tripled a first sync's time; these columns need none on any driver.
            stmt = sa.insert(table).values({c: sa.bindparam(c) for c in new[0]})
            compiled = stmt.compile(dialect=conn.dialect)
            if compiled.positional:
                names = compiled.positiontup or []
                conn.exec_driver_sql(compiled.string, [tuple(r[n] for n in names) for r in new])
            else:
                conn.exec_driver_sql(compiled.string, new)
        if changed:
            conn.execute(sa.update(table).where(table.c[key] == sa.bindparam("_key")), changed)
        return len(new), len(changed)

    def close(self) -> None:
        self.engine.dispose()

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult:
        return self._upsert(self._tables.sessions, rows)

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult:
        return self._upsert(self._tables.checkpoints, rows)

    def _upsert(self, table: sa.Table, rows: Sequence[SessionRow | CheckpointRow]) -> UpsertResult:
        # Last row wins for a repeated id, so the counts describe distinct rows.
        columns = table.columns.keys()  # the row's fields, by name
        values = operator.attrgetter(*columns)  # not dataclasses.asdict: it deep-copies (8x)
        by_id = {row.id: dict(zip(columns, values(row), strict=True)) for row in rows}
        with self._transaction(f"writing {table.name}") as conn:
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
        for chunk in _chunks(ids):
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
            s, c, n = self._tables.sessions, self._tables.checkpoints, sa.func.count()
            grouped = sa.select(s.c.status, n).group_by(s.c.status).order_by(s.c.status)
            return StoreCounts(
                conn.execute(sa.select(n).select_from(s)).scalar_one(),
                conn.execute(sa.select(n).select_from(c)).scalar_one(),
                {status: count for status, count in conn.execute(grouped)},
                conn.execute(sa.select(n).where(s.c.missing_since.is_not(None))).scalar_one(),
            )

    def load_spans(self) -> dict[str, ResourceSpan]:
        with self._transaction("reading rl_resource_spend") as conn:
            t = self._tables.resource_spend
            rows = conn.execute(sa.select(t.c.id, *(t.c[c] for c in _SPAN_COLS))).all()
            return {r[0]: ResourceSpan(*r) for r in rows}  # the columns in the span's field order

    def load_session_spend(self, session_id: str) -> tuple[float, float | None, str] | None:
        """One session's spend row (billed seconds, cost, sweep), if a spend run wrote it."""
        with self._transaction("reading rl_session_spend") as conn:
            t = self._tables.session_spend
            query = sa.select(t.c.billed_seconds, t.c.cost, t.c.sweep)
            row = conn.execute(query.where(t.c.session_id == session_id)).first()
            return None if row is None else (float(row[0]), row[1], str(row[2]))

    def save(
        self,
        resources: Sequence[ResourceSpendRow],
        sessions: Iterable[SessionSpendRow],
        *,
        now_ms: int,
    ) -> None:
        with self._transaction("writing the spend tables") as conn:
            stamp = {"computed_at_ms": now_ms}
            by_resource = {
                r.span.resource_id: _values(r.span, _SPAN_COLS) | _values(r, _SPEND_COLS) | stamp
                for r in resources
            }
            by_session = {s.session_id: asdict(s) | stamp for s in sessions}
            self._write(conn, self._tables.resource_spend, "id", by_resource)
            self._write(conn, self._tables.session_spend, "session_id", by_session)

    def save_spans(self, spans: Iterable[ResourceSpan], *, now_ms: int) -> None:
        with self._transaction("writing rl_resource_spend spans") as conn:
            values = {s.resource_id: _values(s, _SPAN_COLS) for s in spans}
            fresh = {"billed_seconds": 0.0, "computed_at_ms": now_ms}
            self._write(conn, self._tables.resource_spend, "id", values, inserted=fresh)
