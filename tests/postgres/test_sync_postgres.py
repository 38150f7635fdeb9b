"""The sync asset writing to PostgreSQL, run by ``dg.materialize`` against the simulator.

The URL (with its password) is given the way the docs say: ``db_path="$SYNC_DB_URL"``, so run
config holds only the variable's name. The password must then appear nowhere Dagster keeps
things: event log, run config, metadata, captured logs, error messages.
"""

import socket
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.testing import RLSimulator
from tests.support import sim_resource

API_KEY = "sim-key"
pytestmark = [pytest.mark.postgres, pytest.mark.sim(api_key=API_KEY, seed=5)]


def resource(sim: RLSimulator) -> TogetherRLResource:
    return sim_resource(sim, max_attempts=1)


def sync(asset, instance, sim, **config: Any) -> Any:
    return dg.materialize(
        [asset],
        instance=instance,
        resources={"together": resource(sim)},
        run_config={"ops": {asset.op.name: {"config": config}}} if config else None,
        raise_on_error=False,
    )


def metadata(result: Any, asset) -> dict[str, Any]:
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    return {k: v.value for k, v in mat.metadata.items()}


def everything_dagster_kept(instance: dg.DagsterInstance, run_id: str) -> str:
    """Event log, run record and every file under the instance (captured logs, storage)."""
    parts = [serialize_value(e) for e in instance.all_logs(run_id)]
    parts.append(serialize_value(instance.get_run_by_id(run_id)))
    for path in Path(instance.root_directory).rglob("*"):
        if path.is_file():
            parts.append(path.read_bytes().decode(errors="replace"))
    return "\n".join(parts)


def test_sync_to_postgres_is_idempotent_and_marks_vanished_sessions(
    sim, make_sim, instance, pg_server, pg_database, monkeypatch
) -> None:
    monkeypatch.setenv("SYNC_DB_URL", pg_server.url(pg_database))
    sim.world.populate(120, 2, active=6)
    asset = build_session_sync_asset(db_path="$SYNC_DB_URL")
    first = sync(asset, instance, sim, batch_size=50)
    assert first.success
    meta = metadata(first, asset)
    n_checkpoints = int(pg_server.psql("SELECT count(*) FROM rl_checkpoints", pg_database))
    assert meta["dagster/row_count"] == 120 and meta["checkpoint_row_count"] == n_checkpoints
    assert meta["rows_inserted"] == 120 + n_checkpoints
    shown = pg_server.url(pg_database, driver="psycopg2").replace(pg_server.password, "***")
    assert meta["db_path"] == shown
    assert meta["sessions_missing"] == 0

    again = sync(asset, instance, sim, batch_size=50, full=True)
    assert metadata(again, asset)["rows_written"]["rl_sessions"] == {
        "inserted": 0,
        "updated": 0,
        "unchanged": 120,
    }

    # The same database synced from an account where those 120 sessions no longer exist.
    other = make_sim(seed=99)
    other.world.populate(7, 0, active=1)
    result = sync(asset, instance, other, full=True)
    moved = metadata(result, asset)
    assert (moved["sessions_marked_missing"], moved["sessions_missing"]) == (120, 120)
    assert moved["dagster/row_count"] == 127
    live = pg_server.psql(
        "SELECT count(*) FROM rl_sessions WHERE missing_since IS NULL", pg_database
    )
    assert int(live) == 7
    for run in (first, again, result):
        assert pg_server.password not in everything_dagster_kept(instance, run.run_id)


def test_a_filtered_sync_marks_nothing_missing(
    sim, instance, pg_server, pg_database, monkeypatch
) -> None:
    """Sessions outside a filter were not listed; that does not mean they are gone."""
    monkeypatch.setenv("SYNC_DB_URL", pg_server.url(pg_database))
    sim.world.populate(30, 0, active=2)
    everything = build_session_sync_asset(db_path="$SYNC_DB_URL")
    assert sync(everything, instance, sim).success
    filtered = build_session_sync_asset(
        key="filtered", db_path="$SYNC_DB_URL", created_by="nobody-has-this-id"
    )
    meta = metadata(sync(filtered, instance, sim), filtered)
    assert (meta["sessions_marked_missing"], meta["sessions_missing"]) == (0, 0)


def test_unreachable_database_fails_the_run_clearly_without_the_password(
    sim, instance, pg_server, monkeypatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("SYNC_DB_URL", f"postgresql://sync:{pg_server.password}@127.0.0.1:{port}/a")
    sim.world.populate(5, 0, active=1)
    asset = build_session_sync_asset(db_path="$SYNC_DB_URL")
    result = sync(asset, instance, sim)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.step_failure_data.error.to_string()
    assert "cannot reach the tables' database postgresql+psycopg2://sync:***@127.0.0.1" in message
    assert "it is set by the asset's db_path" in message
    assert "Connection refused" in message
    assert not result.asset_materializations_for_node(asset.op.name)
    assert pg_server.password not in everything_dagster_kept(instance, result.run_id)


def test_asset_kind_follows_the_target() -> None:
    kinds = {
        target: next(iter(build_session_sync_asset(db_path=target).specs)).kinds
        for target in (
            "postgresql://u@db/analytics",
            "/data/postgres-export/sync.sqlite",
            "$SYNC_DB_URL",
            None,
        )
    }
    assert kinds == {
        "postgresql://u@db/analytics": {"together", "postgres"},
        "/data/postgres-export/sync.sqlite": {"together", "sqlite"},
        "$SYNC_DB_URL": {"together", "sql"},
        None: {"together", "sql"},  # chosen at run time (resource, instance)
    }
