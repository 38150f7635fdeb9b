"""The tables accumulate when every process starts empty, the way Kubernetes runs Dagster.

The code server (``dagster api grpc``), the daemon (``dagster-daemon run``) and every run are
separate processes, each with its own empty ``DAGSTER_HOME`` (only ``dagster.yaml``), working
directory, ``HOME`` and ``TMPDIR``. Runs are started by ``fresh_launcher.FreshDirRunLauncher``
(``dagster api execute_run`` in a new directory, deleted when the run ends, as a pod's disk
is). The instance is on PostgreSQL, its password read from the environment as in
``deploy/dagster.yaml``, and the definitions set nothing about the tables: they default to the
instance's database, schema ``together_rl``.

Three rounds of one sync run and one spend run (requested by a sensor, launched by the
daemon) against the simulator with a few hundred sessions; between rounds the world moves on
(checkpoints land, sessions stop, model resources stop). Then every row is read back from
PostgreSQL, and the spend of the resources the rounds watched equals the simulator's bill
within 1%, which needs the READY spans observed by earlier runs: a run that started with
empty tables would bill a resource stopped since then from its first session at best.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.daemon import (
    prepare_dagster_home,
    stop_process_group,
    wait_for,
)
from tests import daemon_defs

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-fresh-CANARY-3141"
MODEL = "Qwen/Qwen3-8B"
PG_PASSWORD_ENV = "RL_E2E_PG_PASSWORD"
ROUNDS = 3
pytestmark = [pytest.mark.daemon, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(2400)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scratch(base: Path) -> dict[str, str]:
    """An empty home, working directory and temp directory for one process."""
    for name in ("home", "work", "tmp"):
        (base / name).mkdir(parents=True)
    return {"HOME": str(base), "TMPDIR": str(base / "tmp"), "DAGSTER_HOME": str(base / "home")}


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _code_server_up(port: int) -> bool:
    from dagster._grpc.client import DagsterGrpcClient

    try:
        DagsterGrpcClient(port=port, host="127.0.0.1").ping("up")
    except Exception:
        return False
    return True


def test_tables_accumulate_when_every_run_starts_in_a_fresh_directory(
    pg_server, pg_database, tmp_path, monkeypatch
):
    record = tmp_path / "launches"
    record.mkdir()
    rounds_file = tmp_path / "rounds"
    rounds_file.write_text("0")
    monkeypatch.setenv(PG_PASSWORD_ENV, pg_server.password)
    storage = pg_server.dagster_storage(pg_database)
    storage["postgres"]["postgres_db"]["password"] = {"env": PG_PASSWORD_ENV}
    daemon_env = _scratch(tmp_path / "daemon")
    home = prepare_dagster_home(Path(daemon_env["DAGSTER_HOME"]), storage=storage)
    with (home / "dagster.yaml").open("a") as f:
        launcher = {
            "module": "tests.postgres.fresh_launcher",
            "class": "FreshDirRunLauncher",
            "config": {"record_dir": str(record)},
        }
        f.write(f"run_launcher: {json.dumps(launcher)}\n")
    code_env = _scratch(tmp_path / "code_server")
    (Path(code_env["DAGSTER_HOME"]) / "dagster.yaml").write_text(
        (home / "dagster.yaml").read_text()
    )
    port = _free_port()
    workspace = home / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - grpc_server: {{host: 127.0.0.1, port: {port}, location_name: fresh}}\n"
    )

    world = SimulatedWorld(seed=17, clock="manual")
    world.set_price(MODEL, 2.0)
    world.populate(300, 2, active=0, training_checkpoints_per_session=0)
    world.resource_provision_delay = 600
    mine = [world.create_model_resource(MODEL, status="PENDING") for _ in range(3)]
    world.advance_clock(600)  # all three READY now, before the first spend run sees them
    sessions = [world.create_session(mine[i % 2], display_name=f"sweep-e2e-{i}") for i in range(2)]

    with RLSimulator(api_key=API_KEY, world=world) as sim:
        common = daemon_defs.daemon_env(
            "rounds",
            sim.base_url,
            API_KEY,
            RL_ROUNDS_FILE=str(rounds_file),
            PYTHONPATH=str(ROOT),
        )
        code_log = (tmp_path / "code_server.log").open("wb")
        code_server = subprocess.Popen(
            [_bin("dagster"), "api", "grpc", "--module-name", "tests.daemon_defs",
             "--working-directory", str(ROOT), "--host", "127.0.0.1", "--port", str(port),
             "--location-name", "fresh"],
            env={**os.environ, **common, **code_env}, cwd=Path(code_env["HOME"]) / "work",
            stdout=code_log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        daemon = None
        try:
            wait_for(lambda: _code_server_up(port), 300, "the code server")
            daemon_log = (tmp_path / "daemon.log").open("wb")
            daemon = subprocess.Popen(
                [_bin("dagster-daemon"), "run", "-w", str(workspace)],
                env={**os.environ, **common, **daemon_env},
                cwd=Path(daemon_env["HOME"]) / "work",
                stdout=daemon_log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            instance = dg.DagsterInstance.from_config(str(home))

            def play(n: int) -> list[dg.DagsterRun]:
                rounds_file.write_text(str(n))

                def finished() -> list[dg.DagsterRun] | None:
                    runs = instance.get_runs(dg.RunsFilter(tags={"rl/round": str(n)}))
                    done = [r for r in runs if r.is_finished]
                    return done if len(done) == 2 else None

                runs = wait_for(finished, 600, f"the two runs of round {n}", interval=0.5)
                failed = [r.run_id for r in runs if r.status != dg.DagsterRunStatus.SUCCESS]
                assert not failed, _explain(instance, failed, record)
                # A run is SUCCESS a moment before its process exits and its directory goes.
                wait_for(lambda: {r.run_id for r in runs} <= _reaped(record), 300, "the reaping")
                return runs

            play(1)
            for sid in sessions:  # round 2: checkpoints land, one resource stops
                world.advance_steps(sid, 10)
                world.add_inference_checkpoint(sid)
            world.advance_clock(1200)
            world.stop_model_resource(mine[2])
            world.advance_clock(300)
            play(2)
            for sid in sessions:  # round 3: everything stops
                world.stop_session(sid, immediate=True)
            world.advance_clock(600)
            world.stop_model_resource(mine[0])
            world.stop_model_resource(mine[1])
            world.advance_clock(60)
            last = play(3)
            bill = world.billing()
            n_sessions, n_checkpoints = len(world.session_ids()), len(world.checkpoints())
        finally:
            if daemon is not None:
                stop_process_group(daemon)
            stop_process_group(code_server)
            code_log.close()

    # Every run was its own process in its own directory, wiped when it ended.
    launches = [json.loads(line) for line in (record / "launches.jsonl").read_text().splitlines()]
    assert len(launches) == 2 * ROUNDS and {r["exit"] for r in launches} == {0}
    for launch in launches:
        assert not Path(launch["dir"]).exists()
        assert not [p for p in launch["left"] if "sqlite" in p], launch["left"]

    def rows(sql: str) -> list[list[str]]:
        out = pg_server.psql(sql, pg_database).strip()
        return [line.split("|") for line in out.splitlines()]

    assert int(rows("SELECT count(*) FROM together_rl.rl_sessions")[0][0]) == n_sessions
    assert int(rows("SELECT count(*) FROM together_rl.rl_checkpoints")[0][0]) == n_checkpoints
    assert n_sessions >= 300 and n_checkpoints >= 500  # a few hundred of each
    spend = {
        rid: (float(cost or 0), source)
        for rid, cost, source in rows(
            "SELECT id, cost, span_source FROM together_rl.rl_resource_spend"
        )
    }
    assert len(spend) == len(bill)  # every resource, the history's too
    for rid in mine:
        billed = bill[rid]["billed_seconds"] / 3600 * bill[rid]["price_per_hour"]
        assert billed > 0 and spend[rid][0] == pytest.approx(billed, rel=0.01), rid
        assert spend[rid][1] == "updated_at"  # the span seen READY by run 1, kept since
    assert int(rows("SELECT count(*) FROM together_rl.rl_session_spend")[0][0]) >= len(sessions)

    sync_run = next(r for r in last if r.job_name == "rl_sync_job")
    (mat,) = [
        e.asset_materialization
        for e in instance.all_logs(sync_run.run_id)
        if e.is_dagster_event and e.dagster_event.is_step_materialization
    ]
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["db_path"].endswith(f"/{pg_database} (schema together_rl)")
    # The third sync found the first two's rows: nothing re-inserted.
    assert meta["rows_written"]["rl_sessions"]["inserted"] == 0
    assert meta["dagster/row_count"] == n_sessions
    kept = "".join(
        serialize_value(e) for launch in launches for e in instance.all_logs(launch["run_id"])
    )
    assert pg_server.password not in kept and API_KEY not in kept
    instance.dispose()


def _reaped(record: Path) -> set[str]:
    path = record / "launches.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {json.loads(line)["run_id"] for line in lines if line.endswith("}")}


def _explain(instance: dg.DagsterInstance, run_ids: list[str], record: Path) -> str:
    """The failed runs' errors and worker output, for the assertion message."""
    parts = []
    for run_id in run_ids:
        for e in instance.all_logs(run_id):
            if e.is_dagster_event and e.dagster_event.event_type_value in (
                "STEP_FAILURE",
                "RUN_FAILURE",
            ):
                parts.append(str(e.dagster_event.event_specific_data)[:3000])
        log = record / f"run-{run_id}.log"
        if log.exists():
            parts.append(log.read_text(errors="replace")[-3000:])
    return "\n".join(parts)
