"""The throwaway PostgreSQL server of ``tests.pg_server`` and a Dagster
instance on it: loopback only, password required, stopped by PID with nothing left behind."""

import socket
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing.daemon import group_alive, prepare_dagster_home
from tests.pg_server import (
    PostgresUnavailable,
    find_postgres_bin,
    postgres_server,
    start_postgres,
)

pytestmark = pytest.mark.postgres


def test_server_answers_on_loopback_only_and_wants_the_password(pg_server, pg_database):
    assert pg_server.psql("SELECT current_database()", pg_database).strip() == pg_database
    assert pg_server.psql("SHOW listen_addresses").strip() == "127.0.0.1"
    # No Unix socket: every client goes through TCP on loopback, with the password.
    assert pg_server.psql("SHOW unix_socket_directories").strip() == ""
    wrong = pg_server.__class__(
        pg_server.bindir, pg_server.base_dir, pg_server.port, "not-the-password"
    )
    with pytest.raises(RuntimeError, match="password authentication failed"):
        wrong.psql("SELECT 1")
    assert pg_server.password not in repr(pg_server)


def test_dagster_instance_on_the_server(pg_server, pg_database, tmp_path):
    home = prepare_dagster_home(tmp_path / "home", storage=pg_server.dagster_storage(pg_database))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        result = dg.materialize([dg.asset(name="probe")(lambda: 1)], instance=instance)
        assert result.success
        run_id = result.run_id
    # The run is in PostgreSQL, not in a SQLite file under DAGSTER_HOME.
    tables = pg_server.psql("SELECT tablename FROM pg_tables", pg_database).split()
    assert {"runs", "event_logs", "instigators"} <= set(tables)
    assert (
        pg_server.psql(f"SELECT count(*) FROM runs WHERE run_id = '{run_id}'", pg_database).strip()
        == "1"
    )
    assert not list(home.rglob("*.db"))


def test_stop_by_pid_leaves_nothing(tmp_path):
    if find_postgres_bin() is None:
        pytest.skip("PostgreSQL server binaries not installed")
    with postgres_server() as pg:
        pid, base, port = pg.pid, pg.base_dir, pg.port
        assert pid is not None and group_alive(pid)
    assert not group_alive(pid)
    assert not base.exists()
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    pg.stop()  # idempotent


def test_missing_binaries_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("RL_PG_BIN", str(tmp_path))
    assert find_postgres_bin() is None
    with pytest.raises(PostgresUnavailable, match="apt-get install -y postgresql"):
        start_postgres(tmp_path / "cluster")
    assert not (Path(tmp_path) / "cluster").exists()


def test_the_server_helper_needs_neither_dagster_nor_a_driver() -> None:
    """Tests and benchmarks import it before anything else: stdlib only."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = "import sys, tests.pg_server; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    loaded = set(out.stdout.split())
    assert not loaded & {"dagster", "sqlalchemy", "psycopg2", "httpx"}, loaded
