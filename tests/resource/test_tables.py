"""One table store, configured once (issue #18): where the tables go, what is refused, and the
upgrade of a database written by 0.2.

Real DagsterInstances, real SQLite files, the spend and sync assets materialized against the
simulator; PostgreSQL cases are in ``tests/resource/test_tables_postgres.py``.
"""

import os
import socket
import sqlite3
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from rl_sessions_dagster import TogetherRLComponent, TogetherRLResource
from rl_sessions_dagster.assets import build_session_sync_asset, build_spend_asset
from rl_sessions_dagster.core.spend import ResourceSpan
from rl_sessions_dagster.resource.tables import (
    TABLES_URL_ENV,
    open_table_store,
    resolve_tables_target,
)
from rl_sessions_dagster.storage import SQLAlchemyTableStore
from rl_sessions_dagster.storage.rows import SCHEMA_VERSION, ResourceSpendRow, SessionSpendRow
from rl_sessions_dagster.storage.urls import TableStoreConfigError, TableStoreError
from rl_sessions_dagster.testing import RLSimulator

KEY = "sk-test-CANARY-tables"
SECRET = "pw-CANARY-7b1f"
K8S = {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": {"job_namespace": "x"}}


@pytest.fixture(autouse=True)
def _no_tables_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TABLES_URL_ENV, raising=False)


def test_one_setting_chooses_the_database_in_a_documented_order(tmp_path, monkeypatch) -> None:
    with dg.instance_for_test() as instance:
        default = resolve_tables_target(TogetherRLResource(), instance)
        assert default.url == os.path.join(instance.root_directory, "together_rl_sync.sqlite")
        assert default.schema is None and "DAGSTER_HOME" in default.setting
        monkeypatch.setenv(TABLES_URL_ENV, f"sqlite:///{tmp_path}/env.db")
        env = resolve_tables_target(TogetherRLResource(), instance)
        assert (env.url, env.setting) == (
            f"sqlite:///{tmp_path}/env.db",
            f"the {TABLES_URL_ENV} environment variable",
        )
        resource = TogetherRLResource(database_url=str(tmp_path / "resource.db"))
        chosen = resolve_tables_target(resource, instance)
        assert chosen.setting == "TogetherRLResource.database_url"
        override = resolve_tables_target(resource, instance, ":memory:", url_setting="db_path")
        assert (override.url, override.setting) == (":memory:", "db_path")


def test_a_file_is_refused_where_runs_start_in_new_containers(tmp_path) -> None:
    sqlite_file = f"sqlite:///{tmp_path}/t.db"
    with dg.instance_for_test(overrides={"run_launcher": K8S}) as instance:
        for resource in (TogetherRLResource(), TogetherRLResource(database_url=sqlite_file)):
            with pytest.raises(TableStoreConfigError) as info:
                resolve_tables_target(resource, instance)
            text = str(info.value)
            assert "dagster_k8s.K8sRunLauncher" in text and "RL_TABLES_URL" in text
            assert "TogetherRLResource.database_url" in text
        # A database every run reaches is fine (nothing connects: resolving only).
        url = f"postgresql://rl:{SECRET}@db.internal:5432/analytics"
        assert resolve_tables_target(TogetherRLResource(database_url=url), instance).url == url
        assert not list(tmp_path.iterdir())


def test_the_spend_asset_refuses_a_url_it_cannot_use_and_creates_no_file(
    tmp_path, monkeypatch
) -> None:
    """0.2 took such a URL for a path: a directory named after it, password included."""
    monkeypatch.chdir(tmp_path)
    asset = build_spend_asset()
    with RLSimulator(api_key=KEY) as sim, dg.instance_for_test() as instance:
        result = dg.materialize(
            [asset],
            instance=instance,
            resources={"together": TogetherRLResource(api_key=KEY, base_url=sim.base_url)},
            run_config={
                "ops": {asset.op.name: {"config": {"db_path": f"postgres://rl:{SECRET}@db/x"}}}
            },
            raise_on_error=False,
        )
        assert not result.success
        (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        message = failure.step_failure_data.error.to_string()
        assert "the run config's db_path" in message and "write postgresql://" in message
        assert SECRET not in message
        assert SECRET not in "".join(str(e) for e in instance.all_logs(result.run_id))
    assert list(tmp_path.iterdir()) == []  # no directory or file named after the URL


def test_a_literal_url_no_store_can_use_is_refused_when_the_resource_is_built() -> None:
    with pytest.raises(TableStoreConfigError, match="'mongodb'") as info:
        TogetherRLResource(database_url=f"mongodb://rl:{SECRET}@db/x")
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    with pytest.raises(TableStoreConfigError, match="not a file path either"):
        TogetherRLResource(database_url="://db/x")
    assert TogetherRLResource(database_url="relative/tables.db").database_url  # a plain path
    literal = TogetherRLResource(database_url=f"postgresql://rl:{SECRET}@db/x")
    assert SECRET not in repr(literal) and SECRET not in str(literal)


def test_loading_the_definitions_never_connects_to_the_tables(monkeypatch) -> None:
    """A listening socket no one accepts on: any connection attempt would wait in its queue."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        url = f"postgresql://rl:{SECRET}@127.0.0.1:{port}/analytics"
        monkeypatch.setenv("RL_TEST_TABLES", url)
        resource = TogetherRLResource(database_url=dg.EnvVar("RL_TEST_TABLES"))
        defs = dg.Definitions(
            assets=[build_session_sync_asset(), build_spend_asset()],
            resources={"together": resource},
        )
        dg.Definitions.validate_loadable(defs)
        defs.get_repository_def().get_all_jobs()
        component = TogetherRLComponent.resolve_from_yaml(
            "resource: {database_url_env: RL_TEST_TABLES}\nspend: {}\n"
        )
        built = component.resource.database_url
        assert isinstance(built, dg.EnvVar) and built == "RL_TEST_TABLES"
        loaded = dg.build_defs_for_component(component=component)
        dg.Definitions.validate_loadable(loaded)
        assert SECRET not in repr(resource) and SECRET not in repr(component)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody knocked


OLD_SYNC_DDL = """
CREATE TABLE rl_sessions (id TEXT PRIMARY KEY, display_name TEXT, status TEXT NOT NULL,
    raw_status TEXT NOT NULL, base_model TEXT, model_resources_id TEXT, created_by TEXT,
    created_at TEXT, updated_at TEXT, step INTEGER, error_code TEXT, error_message TEXT,
    wandb_url TEXT, wandb_project TEXT, n_inference_checkpoints INTEGER NOT NULL,
    synced_at TEXT NOT NULL, missing_since TEXT);
CREATE TABLE rl_checkpoints (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL,
    step INTEGER, created_at TEXT, base_model TEXT, model_id TEXT, model_revision_id TEXT,
    adapter_id TEXT, adapter_revision_id TEXT, legacy_model_name TEXT,
    registered INTEGER NOT NULL, synced_at TEXT NOT NULL);
CREATE INDEX rl_sessions_status ON rl_sessions(status);
CREATE TABLE rl_resource_spend (id TEXT PRIMARY KEY, status TEXT NOT NULL, base_model TEXT,
    ready_from_ms INTEGER, ready_until_ms INTEGER, span_source TEXT NOT NULL,
    price_per_hour REAL, currency TEXT, billed_seconds REAL NOT NULL, idle_seconds REAL,
    cost REAL, idle_cost REAL, computed_at_ms INTEGER NOT NULL);
CREATE TABLE rl_session_spend (session_id TEXT PRIMARY KEY, model_resources_id TEXT NOT NULL,
    display_name TEXT, sweep TEXT NOT NULL, billed_seconds REAL NOT NULL, cost REAL,
    computed_at_ms INTEGER NOT NULL);
INSERT INTO rl_sessions (id, status, raw_status, n_inference_checkpoints, synced_at)
    VALUES ('s-old', 'RUNNING', 'TRAINING_SESSION_STATUS_RUNNING', 1, '2026-11-01T00:00:00');
INSERT INTO rl_checkpoints (id, session_id, type, registered, synced_at)
    VALUES ('c-old', 's-old', 'INFERENCE', 1, '2026-11-01T00:00:00');
INSERT INTO rl_resource_spend VALUES ('r-old', 'MODEL_RESOURCES_STATUS_READY', 'Qwen/Qwen3-8B',
    1000, NULL, 'updated_at', 4.0, 'USD', 3600.0, 600.0, 4.0, 0.66, 5000);
INSERT INTO rl_session_spend VALUES ('s-old', 'r-old', 'sweep-1', 'sweep', 3000.0, 3.33, 5000);
PRAGMA user_version = 2;
"""


def test_a_0_2_sqlite_file_is_upgraded_in_place_and_keeps_its_rows(tmp_path) -> None:
    path = tmp_path / "together_rl_sync.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SYNC_DDL)
    for _ in range(2):  # idempotent: the second open finds version 3 and changes nothing
        with SQLAlchemyTableStore(str(path)) as store:
            counts = store.counts()
            assert (counts.sessions, counts.checkpoints) == (1, 1)
            (span,) = store.load_spans().values()
            assert (span.resource_id, span.ready_from_ms, span.price_per_hour) == (
                "r-old",
                1000,
                4.0,
            )
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT id, version FROM rl_schema_version").fetchall() == [
            (1, SCHEMA_VERSION)
        ]
        assert conn.execute("SELECT cost FROM rl_session_spend").fetchall() == [(3.33,)]


def test_a_database_of_a_newer_release_is_refused(tmp_path) -> None:
    path = str(tmp_path / "t.db")
    SQLAlchemyTableStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE rl_schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(TableStoreError, match="newer release"):
        SQLAlchemyTableStore(path)


def _span(rid: str, **kw) -> ResourceSpan:
    base = {"raw_status": "MODEL_RESOURCES_STATUS_READY", "base_model": "m", "ready_from_ms": 0}
    return ResourceSpan(rid, **{**base, **kw})  # type: ignore[arg-type]


def test_save_spans_updates_only_the_span_and_save_is_one_transaction(tmp_path) -> None:
    with SQLAlchemyTableStore(str(tmp_path / "t.db")) as store:
        store.save([ResourceSpendRow(_span("r1"), 3600.0, 0.0, 4.0, 0.0)], [], now_ms=10)
        store.save_spans(
            [_span("r1", ready_until_ms=7_200_000, raw_status="STOPPED"), _span("r2")], now_ms=20
        )
        spans = store.load_spans()
        assert spans["r1"].ready_until_ms == 7_200_000 and spans["r1"].raw_status == "STOPPED"
        t = store.table("rl_resource_spend")
        with store.engine.connect() as conn:
            rows = {
                r.id: (r.billed_seconds, r.cost, r.computed_at_ms)
                for r in conn.execute(sa.select(t))
            }
        assert rows == {"r1": (3600.0, 4.0, 10), "r2": (0.0, None, 20)}
        # A bad session row (NOT NULL sweep) fails the save: its resource rows are not written.
        bad = SessionSpendRow("s1", "r3", None, None, 1.0, None)  # type: ignore[arg-type]
        with pytest.raises(TableStoreError, match="nothing of this call was written"):
            store.save([ResourceSpendRow(_span("r3"), 1.0, None, None, None)], [bad], now_ms=30)
        assert set(store.load_spans()) == {"r1", "r2"}


def test_sync_and_spend_share_the_resource_database(tmp_path) -> None:
    db = tmp_path / "shared" / "tables.db"
    resource_kw = {"api_key": KEY, "database_url": f"sqlite:///{db}"}
    sync, spend = build_session_sync_asset(), build_spend_asset()
    with RLSimulator(api_key=KEY, seed=3) as sim, dg.instance_for_test() as instance:
        sim.world.populate(20, 1, active=2)
        sim.world.create_model_resource("Qwen/Qwen3-8B")
        resource = TogetherRLResource(base_url=sim.base_url, **resource_kw)
        result = dg.materialize([sync, spend], instance=instance, resources={"together": resource})
        assert result.success
        n_resources = len(sim.world.billing())
        for node in (sync.op.name, spend.op.name):
            (mat,) = result.asset_materializations_for_node(node)
            assert mat.metadata["db_path"] == dg.MetadataValue.path(str(db))
    assert not Path(instance.root_directory, "together_rl_sync.sqlite").exists()
    with sqlite3.connect(db) as conn:
        for table, n in (("rl_sessions", 20), ("rl_resource_spend", n_resources)):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (n,)


def test_open_table_store_closes_and_shows_no_password(tmp_path) -> None:
    with dg.instance_for_test() as instance, open_table_store(None, instance) as store:
        assert store.is_file and store.display.endswith("together_rl_sync.sqlite")
    unreachable = f"postgresql://rl:{SECRET}@127.0.0.1:1/x"
    with dg.instance_for_test() as instance:
        resource = TogetherRLResource(database_url=unreachable)
        with pytest.raises(TableStoreError) as info, open_table_store(resource, instance):
            pass
    assert "it is set by TogetherRLResource.database_url" in str(info.value)
    assert SECRET not in str(info.value) and info.value.__cause__ is None
