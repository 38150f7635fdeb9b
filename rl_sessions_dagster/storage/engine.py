"""How the table store talks to a database, one transaction per call. A write reads the stored
rows of its ids, inserts new and updates changed ones: no dialect's upsert syntax, exact counts.
SQLite runs in WAL mode with ``BEGIN IMMEDIATE`` (DDL too), so a concurrent writer waits. The
URL's password is redacted from ``repr``, :attr:`display` and every error."""

import importlib.util
import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, make_url

from .schema import define_tables, upgrade
from .urls import TableStoreConfigError, TableStoreError, check_target, is_database_url, redact_url

_R = TypeVar("_R")
#: Ids per ``IN (...)`` list: small enough for every dialect.
_CHUNK = 900


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


def _insert_many(conn: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    # One executemany of a statement compiled once: SQLAlchemy's per-row parameter processing
    # tripled a first sync's time, and these columns (text, numbers) need none on any driver.
    stmt = sa.insert(table).values({c: sa.bindparam(c) for c in rows[0]})
    compiled = stmt.compile(dialect=conn.dialect)
    if compiled.positional:
        names = compiled.positiontup or []
        conn.exec_driver_sql(compiled.string, [tuple(r[n] for n in names) for r in rows])
    else:
        conn.exec_driver_sql(compiled.string, rows)


def id_chunks(items: Sequence[_R]) -> Iterator[Sequence[_R]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


class TableDatabase:
    """Every table of the library on one database URL or SQLite file path, created or upgraded
    on open (in ``schema`` where the database has them); connections are pinged before use.
    ``connect_timeout`` bounds a PostgreSQL connection attempt, ``timeout`` SQLite's lock wait."""

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
        parsed = self._parse(url)
        self.url = parsed
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
        if backend == "sqlite":
            self._sqlite_transactions(self.engine, wal=bool(parsed.database))
        self._tables = define_tables(self.schema)
        with self._transaction("creating or upgrading its tables") as conn:
            upgrade(conn, self._tables)

    def _parse(self, url: "str | Path | URL") -> URL:
        if isinstance(url, URL):
            return _driver_url(url)
        text = str(url)
        check_target(text, self.setting)
        if text == ":memory:":  # a private in-memory database
            return URL.create("sqlite")
        if not is_database_url(text):
            return URL.create("sqlite", database=os.path.abspath(os.path.expanduser(text)))
        try:
            return _driver_url(make_url(text))
        except Exception as exc:  # the message may quote the URL: say only what kind it is
            raise TableStoreConfigError(
                f"{self.setting} is not a SQLAlchemy database URL: {redact_url(text)} "
                f"({type(exc).__name__})"
            ) from None

    @staticmethod
    def _sqlite_transactions(engine: sa.Engine, *, wal: bool) -> None:
        """pysqlite opens transactions lazily and not for DDL: take them over (SQLAlchemy's
        documented recipe) so every call, DDL included, is one ``BEGIN IMMEDIATE``."""

        @sa.event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None
            if wal:
                dbapi_connection.execute("PRAGMA journal_mode=WAL")
                dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.display!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def display(self) -> str:
        """Where the tables are, safe to show: the file path, or the URL with ``***``."""
        if self.url.get_backend_name() == "sqlite":
            return self.url.database or ":memory:"
        shown = redact_url(self.url)
        return f"{shown} (schema {self.schema})" if self.schema else shown

    @property
    def is_file(self) -> bool:
        """True for a SQLite file: a process with another filesystem will not see it."""
        return self.url.get_backend_name() == "sqlite" and bool(self.url.database)

    def table(self, name: str) -> sa.Table:
        """One of the tables by name (``rl_sessions``, ...), for ad-hoc reads."""
        return self._tables.meta.tables[f"{self.schema}.{name}" if self.schema else name]

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """A database error becomes a :class:`TableStoreError` saying it happened while
        ``action`` (``from None``: the driver's chain, which may quote the URL, is dropped)."""
        try:
            yield
        except TableStoreError:
            raise
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
        """One transaction: nothing of it is written if it fails."""
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
    ) -> tuple[int, int]:
        """Insert new ids, update ids whose values (but the ``ignore``d) differ; (new, changed).
        The rows of one call have the same columns; an update sets only those."""
        if not by_id:
            return 0, 0
        some = next(iter(by_id.values()))
        data = [c for c in some if c != key and c not in ignore]
        stored: dict[str, tuple[Any, ...]] = {}
        selected = [table.c[key], *(table.c[c] for c in data)]
        for chunk in id_chunks(list(by_id)):
            for rec in conn.execute(sa.select(*selected).where(table.c[key].in_(chunk))):
                stored[rec[0]] = tuple(rec[1:])
        new: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        for rid, values in by_id.items():
            before = stored.get(rid)
            if before is None:
                new.append({key: rid, **values})
            elif before != tuple(values[c] for c in data):
                changed.append({"_key": rid, **{c: v for c, v in values.items() if c != key}})
        if new:
            _insert_many(conn, table, new)
        if changed:
            conn.execute(sa.update(table).where(table.c[key] == sa.bindparam("_key")), changed)
        return len(new), len(changed)

    def close(self) -> None:
        self.engine.dispose()
