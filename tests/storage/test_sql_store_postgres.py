"""The SQLAlchemy store on a real PostgreSQL, held to the SQLite store's contract.

The contract tests run on both stores (the default SQLite file and PostgreSQL through
SQLAlchemy): idempotent upserts that write only what changed, exact counts, whole-batch
rollback, sessions that vanish from the API marked, tables of an older release upgraded.
"""

import dataclasses
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_sessions_dagster.storage import SessionRow, SessionStore, SQLAlchemyTableStore
from rl_sessions_dagster.storage.rows import (
    SCHEMA_VERSION,
    CheckpointRow,
    UpsertResult,
    checkpoint_rows,
    session_row,
)
from rl_sessions_dagster.storage.urls import TableStoreConfigError, TableStoreError, redact_url
from tests.pg_server import PostgresServer

from .test_sync_store import T0, make_session, query


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        store: Any = SQLAlchemyTableStore(tmp_path / "sync.sqlite")
    else:
        pg: PostgresServer = request.getfixturevalue("pg_server")
        store = SQLAlchemyTableStore(pg.url(request.getfixturevalue("pg_database")))
    with store:
        yield store


@pytest.fixture
def pg_store(pg_server: PostgresServer, pg_database: str) -> Iterator[SQLAlchemyTableStore]:
    with SQLAlchemyTableStore(pg_server.url(pg_database)) as store:
        yield store


def test_postgres_tables_have_the_sqlite_columns(pg_store, pg_server, pg_database) -> None:
    assert isinstance(pg_store, SessionStore)
    assert pg_store.engine.dialect.name == "postgresql"
    for table, row_type in (("rl_sessions", SessionRow), ("rl_checkpoints", CheckpointRow)):
        cols = pg_server.psql(
            "SELECT column_name FROM information_schema.columns "
            f"WHERE table_name = '{table}' ORDER BY ordinal_position",
            pg_database,
        ).split()
        assert cols == [f.name for f in dataclasses.fields(row_type)]


def test_upsert_reports_inserted_updated_unchanged(any_store) -> None:
    rows = [session_row(make_session(f"s{i}"), T0) for i in range(3)]
    assert any_store.upsert_sessions(rows) == UpsertResult(inserted=3)
    later = T0 + timedelta(minutes=15)
    again = [session_row(make_session(f"s{i}"), later) for i in range(3)]
    assert any_store.upsert_sessions(again) == UpsertResult(unchanged=3)
    stopped = session_row(make_session("s1", status="STOPPED"), later)
    new = session_row(make_session("s9"), later)
    assert any_store.upsert_sessions([stopped, new, again[0]]) == UpsertResult(1, 1, 1)
    got = dict(query(any_store, "SELECT id, status FROM rl_sessions"))
    assert got == {"s0": "RUNNING", "s1": "STOPPED", "s2": "RUNNING", "s9": "RUNNING"}
    synced = dict(query(any_store, "SELECT id, synced_at FROM rl_sessions"))
    # Unchanged rows are not rewritten: synced_at is the time of the last real write.
    assert synced["s0"] == T0.isoformat() and synced["s1"] == later.isoformat()


def test_null_transitions_and_repeated_ids(any_store) -> None:
    base = session_row(make_session(), T0)
    any_store.upsert_sessions([base])
    assert any_store.upsert_sessions([dataclasses.replace(base, display_name=None)]).updated == 1
    assert any_store.upsert_sessions([base]).updated == 1
    assert any_store.upsert_sessions([base]).unchanged == 1
    stopped = dataclasses.replace(base, id="other", status="STOPPED")
    first = dataclasses.replace(stopped, status="RUNNING")
    assert any_store.upsert_sessions([first, stopped]) == UpsertResult(inserted=1)
    assert query(any_store, "SELECT status FROM rl_sessions WHERE id = 'other'") == [("STOPPED",)]


def test_checkpoints_and_counts(any_store) -> None:
    sessions = [make_session("a"), make_session("b", status="ERROR"), make_session("c")]
    any_store.upsert_sessions([session_row(s, T0) for s in sessions])
    ck = [r for s in sessions for r in checkpoint_rows(s, T0)]
    assert any_store.upsert_checkpoints(ck) == UpsertResult(inserted=15)
    assert any_store.upsert_checkpoints(ck) == UpsertResult(unchanged=15)
    counts = any_store.counts()
    assert (counts.sessions, counts.checkpoints, counts.sessions_missing) == (3, 15, 0)
    assert counts.sessions_by_status == {"ERROR": 1, "RUNNING": 2}


def test_a_failing_batch_is_rolled_back_whole_on_postgres(pg_store, pg_server) -> None:
    good = session_row(make_session("ok"), T0)
    bad = dataclasses.replace(session_row(make_session("bad"), T0), status=None)  # NOT NULL
    with pytest.raises(TableStoreError, match="NotNullViolation") as info:
        pg_store.upsert_sessions([good, bad])
    assert "nothing of this call was written" in str(info.value)
    assert pg_server.password not in str(info.value)
    assert pg_store.counts().sessions == 0
    assert pg_store.upsert_sessions([good]) == UpsertResult(inserted=1)  # still usable


def test_sessions_gone_from_the_api_are_marked_and_cleared_when_back(any_store) -> None:
    rows = [session_row(make_session(f"s{i}"), T0) for i in range(4)]
    any_store.upsert_sessions(rows)
    assert any_store.mark_missing({"s0", "s1", "s2", "s3"}, T0) == 0
    later = T0 + timedelta(hours=1)
    assert any_store.mark_missing({"s0", "s2"}, later) == 2
    assert any_store.mark_missing({"s0", "s2"}, later + timedelta(hours=1)) == 0  # kept first time
    marked = dict(query(any_store, "SELECT id, missing_since FROM rl_sessions"))
    assert marked == {"s0": None, "s1": later.isoformat(), "s2": None, "s3": later.isoformat()}
    assert any_store.counts().sessions_missing == 2
    # s1 is listed again: the upsert clears the mark, and that is a change.
    back = session_row(make_session("s1"), later)
    assert any_store.upsert_sessions([back]) == UpsertResult(updated=1)
    assert any_store.counts().sessions_missing == 1


def test_a_table_of_release_0_1_gains_the_new_column(pg_server, pg_database, tmp_path) -> None:
    old_ddl = (
        "CREATE TABLE rl_sessions (id TEXT PRIMARY KEY, display_name TEXT, status TEXT NOT NULL,"
        " raw_status TEXT NOT NULL, base_model TEXT, model_resources_id TEXT, created_by TEXT,"
        " created_at TEXT, updated_at TEXT, step INTEGER, error_code TEXT, error_message TEXT,"
        " wandb_url TEXT, wandb_project TEXT, n_inference_checkpoints INTEGER NOT NULL,"
        " synced_at TEXT NOT NULL)"
    )
    old_row = (
        "INSERT INTO rl_sessions (id, status, raw_status, n_inference_checkpoints, synced_at) "
        "VALUES ('old', 'RUNNING', 'TRAINING_SESSION_STATUS_RUNNING', 0, 'x')"
    )
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(old_ddl)
        conn.execute(old_row)
    pg_server.psql(f"{old_ddl}; {old_row}", pg_database)
    for store in (SQLAlchemyTableStore(path), SQLAlchemyTableStore(pg_server.url(pg_database))):
        with store:
            assert query(store, "SELECT id, missing_since FROM rl_sessions") == [("old", None)]
            assert store.mark_missing(set(), T0) == 1
            assert store.counts().sessions_missing == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM rl_schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]


def test_the_table_store_picks_its_backend_by_target(pg_server, pg_database, tmp_path) -> None:
    with SQLAlchemyTableStore(pg_server.url(pg_database)) as pg:
        assert isinstance(pg, SQLAlchemyTableStore)
        # A plain postgresql:// URL works with the psycopg2 that dagster-postgres installs.
        assert pg.engine.dialect.driver == "psycopg2"
        assert pg_server.password not in repr(pg)
    with SQLAlchemyTableStore(str(tmp_path / "x.sqlite")) as file_store:
        assert file_store.is_file and file_store.engine.dialect.name == "sqlite"
    with pytest.raises(TableStoreConfigError, match=r"scheme 'postgres'.*write postgresql://"):
        SQLAlchemyTableStore(pg_server.url(pg_database).replace("postgresql", "postgres"))
    assert not [p for p in tmp_path.iterdir() if "postgres" in p.name or "@" in p.name]


def test_unreachable_database_is_a_clear_error_without_the_password(pg_server) -> None:
    url = f"postgresql://sync:{pg_server.password}@127.0.0.1:1/analytics"
    with pytest.raises(TableStoreError) as info:
        SQLAlchemyTableStore(url, connect_timeout=3)
    text = str(info.value)
    assert text.startswith("cannot reach the tables' database postgresql+psycopg2://sync:***@")
    assert "Connection refused" in text or "connection" in text.lower()
    assert pg_server.password not in text and pg_server.password not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # A wrong password is refused by the server (authentication is really on).
    wrong = pg_server.url().replace(pg_server.password, "not-it")
    with pytest.raises(TableStoreError, match="password authentication failed"):
        SQLAlchemyTableStore(wrong)


def test_redact_url_hides_passwords_even_unparseable() -> None:
    assert redact_url("postgresql://u:s3cr%40t@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert "s3cret" not in redact_url("weird://u:s3cret@h:port-not-int/d")
    assert redact_url("/a/file.sqlite") == "/a/file.sqlite"


_ids = st.sampled_from([f"s{i}" for i in range(6)])
_statuses = st.sampled_from(["RUNNING", "STOPPED", "ERROR"])
_batches = st.lists(st.lists(st.tuples(_ids, _statuses), max_size=8), max_size=5)


@pytest.mark.postgres
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=_batches)
def test_postgres_upserts_behave_like_a_last_write_wins_dict(pg_store, batches) -> None:
    template = session_row(make_session(), T0)
    with pg_store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM rl_sessions"))
    model: dict[str, str] = {}
    for batch in batches:
        rows = [dataclasses.replace(template, id=i, status=s) for i, s in batch]
        distinct = dict(batch)
        inserted = len(distinct.keys() - model.keys())
        updated = sum(1 for i, s in distinct.items() if i in model and model[i] != s)
        result = pg_store.upsert_sessions(rows)
        assert (result.inserted, result.updated, result.total) == (inserted, updated, len(distinct))
        model.update(distinct)
    assert dict(query(pg_store, "SELECT id, status FROM rl_sessions")) == model
