"""The tables on a real PostgreSQL: by default in the instance's own database (schema
``together_rl``), opened concurrently on an empty database, and an unreachable tables' database
failing the run with the setting named and nothing written.
"""

import socket
import threading
from pathlib import Path

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.assets import build_session_sync_asset, build_spend_asset
from rl_sessions_dagster.resource.tables import TABLES_URL_ENV
from rl_sessions_dagster.storage import SQLAlchemyTableStore
from rl_sessions_dagster.storage.rows import SCHEMA_VERSION
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import prepare_dagster_home

pytestmark = pytest.mark.postgres
KEY = "sk-test-CANARY-pgtables"


@pytest.fixture(autouse=True)
def _no_tables_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TABLES_URL_ENV, raising=False)


def test_without_a_setting_the_tables_go_to_the_instance_database(
    pg_server, pg_database, tmp_path
) -> None:
    home = prepare_dagster_home(tmp_path / "home", storage=pg_server.dagster_storage(pg_database))
    sync, spend = build_session_sync_asset(), build_spend_asset()
    with (
        RLSimulator(api_key=KEY, seed=4) as sim,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        sim.world.populate(40, 2, active=3)
        resource = TogetherRLResource(api_key=KEY, base_url=sim.base_url)
        result = dg.materialize([sync, spend], instance=instance, resources={"together": resource})
        assert result.success
        (mat,) = result.asset_materializations_for_node(sync.op.name)
        shown = mat.metadata["db_path"].value
        assert shown.endswith(f"/{pg_database} (schema together_rl)") and ":***@" in shown
        kept = [serialize_value(e) for e in instance.all_logs(result.run_id)]
        n_resources = len(sim.world.billing())
    assert pg_server.password not in "".join(kept)
    assert [p.name for p in home.iterdir() if "sqlite" in p.name] == []

    def count(table: str) -> int:
        return int(pg_server.psql(f"SELECT count(*) FROM together_rl.{table}", pg_database))

    assert (count("rl_sessions"), count("rl_resource_spend")) == (40, n_resources)
    assert count("rl_checkpoints") > 0 and count("rl_session_spend") > 0
    version = pg_server.psql("SELECT version FROM together_rl.rl_schema_version", pg_database)
    assert int(version) == SCHEMA_VERSION
    # Dagster's own tables stay where they were, untouched by ours.
    public = pg_server.psql(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' "
        "AND table_name LIKE 'rl_%'",
        pg_database,
    )
    assert int(public) == 0


def test_stores_opened_at_once_on_an_empty_database_all_succeed(pg_server, pg_database) -> None:
    """The first sync and spend runs of a deployment create the tables at the same moment."""
    url, errors = pg_server.url(pg_database), []

    def open_one() -> None:
        try:
            SQLAlchemyTableStore(url, schema="together_rl").close()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    rows = pg_server.psql("SELECT count(*) FROM together_rl.rl_schema_version", pg_database)
    assert int(rows) == 1


def test_an_unreachable_tables_database_fails_the_run_naming_the_setting(
    pg_server, tmp_path, monkeypatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("RL_TEST_TABLES", f"postgresql://rl:{pg_server.password}@127.0.0.1:{port}/a")
    spend = build_spend_asset()
    with RLSimulator(api_key=KEY) as sim, dg.instance_for_test() as instance:
        sim.world.create_model_resource("Qwen/Qwen3-8B")
        resource = TogetherRLResource(
            api_key=KEY, base_url=sim.base_url, database_url=dg.EnvVar("RL_TEST_TABLES")
        )
        result = dg.materialize(
            [spend], instance=instance, resources={"together": resource}, raise_on_error=False
        )
        assert not result.success
        (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        message = failure.step_failure_data.error.to_string()
        assert "cannot reach the tables' database postgresql+psycopg2://rl:***@" in message
        assert "it is set by TogetherRLResource.database_url" in message
        assert not result.asset_materializations_for_node(spend.op.name)
        everything = "".join(serialize_value(e) for e in instance.all_logs(result.run_id))
        for path in Path(instance.root_directory).rglob("*"):
            if path.is_file():
                everything += path.read_bytes().decode(errors="replace")
    assert pg_server.password not in message and pg_server.password not in everything
