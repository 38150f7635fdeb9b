"""The deployment files in ``deploy/`` load the way Dagster loads them.

``dagster.yaml`` becomes a real instance on the test PostgreSQL (secrets from the environment,
as in production) that captures a run's stdout and stderr where the UI reads them;
``workspace.yaml`` is loaded by the ``dagster`` command line in a subprocess started from the
repository root, as docs/production.md says, with nothing added to its path; the Helm values agree with
both and with the tags the sensors really set. (The Helm values are checked against the chart's
schema in ``tests/test_deploy_files.py``; Helm itself is not run: it is not available offline.)
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config
from dagster._core.workspace.load import location_origins_from_yaml_paths

from rl_sessions_dagster.core.events import EventKind
from rl_sessions_dagster.sensors.tick import TAG_PREFIX

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture
def pg_env(monkeypatch, pg_server, pg_database, tmp_path) -> dict[str, str]:
    env = {
        "DAGSTER_PG_HOST": pg_server.host,
        "DAGSTER_PG_PORT": str(pg_server.port),
        "DAGSTER_PG_USER": pg_server.user,
        "DAGSTER_PG_PASSWORD": pg_server.password,
        "DAGSTER_PG_DB": pg_database,
        "DAGSTER_COMPUTE_LOG_DIR": str(tmp_path / "compute_logs"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.mark.postgres
def test_dagster_yaml_is_a_working_postgres_instance(pg_env, pg_server, tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    config, _ = dagster_instance_config(str(home))  # Dagster's own schema validation
    assert config["run_retries"] == {
        "enabled": True,
        "max_retries": 2,
        "retry_on_asset_or_op_failure": True,
    }
    # The password is read from the environment, not written in the file.
    assert pg_server.password not in (home / "dagster.yaml").read_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
        assert instance.run_monitoring_enabled
        run_config = instance.get_concurrency_config().run_queue_config
        assert run_config is not None and run_config.max_concurrent_runs == 20
        (limit,) = run_config.tag_concurrency_limits
        assert limit == {"key": "together/event", "value": "checkpoint_registered", "limit": 4}
        result = dg.materialize([noisy_probe], instance=instance)
        assert result.success
        # What the step printed is captured where the UI's run view reads it.
        assert type(instance.compute_log_manager).__name__ == "LocalComputeLogManager"
        (captured,) = [
            e.dagster_event.logs_captured_data
            for e in instance.all_logs(result.run_id)
            if e.dagster_event and e.dagster_event.event_type_value == "LOGS_CAPTURED"
        ]
        assert captured.step_keys == ["noisy_probe"]
        log = instance.compute_log_manager.get_log_data(
            [result.run_id, "compute_logs", captured.file_key]
        )
        assert log.stdout is not None and b"probe says hello on stdout" in log.stdout
        assert log.stderr is not None and b"probe complains on stderr" in log.stderr
    assert Path(pg_env["DAGSTER_COMPUTE_LOG_DIR"], result.run_id).is_dir()
    runs = pg_server.psql("SELECT count(*) FROM runs", pg_env["DAGSTER_PG_DB"]).strip()
    assert runs == "1"


@dg.asset
def noisy_probe() -> int:
    print("probe says hello on stdout")
    print("probe complains on stderr", file=sys.stderr)
    return 1


def test_the_evaluation_tag_limit_matches_the_tag_the_sensor_sets() -> None:
    (limit,) = load(DEPLOY / "dagster.yaml")["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit["key"] == f"{TAG_PREFIX}event"
    assert limit["value"] == EventKind.CHECKPOINT_REGISTERED.value


def test_workspace_yaml_names_the_example_code_location_and_where_it_is() -> None:
    (origin,) = location_origins_from_yaml_paths([str(DEPLOY / "workspace.yaml")])
    assert origin.location_name == "together_rl"
    target = origin.loadable_target_origin
    assert target.module_name == "example_repo.definitions"
    # Dagster puts a relative working_directory on sys.path as it is: relative to the directory
    # the process starts in (the repository root, or the image's WORKDIR), not to the file.
    assert target.working_directory == "."
    assert (ROOT / target.working_directory / "example_repo" / "definitions.py").is_file()


@pytest.mark.slow
def test_dagster_definitions_validate_loads_workspace_yaml_from_the_repository_root(
    tmp_path,
) -> None:
    """What a user runs, in a subprocess with nothing added to its path: the venv's ``dagster``
    command (not ``python -m dagster``, which would put the current directory on sys.path).

    This venv's editable install also puts the repository on sys.path, so the same command is
    run again by ``scripts/check_wheel.sh`` in a venv holding only the built wheel, where it
    failed with "No module named 'example_repo'" before ``working_directory`` was set.
    """
    dagster = Path(sys.executable).parent / "dagster"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DAGSTER_HOME"}}
    env["DAGSTER_HOME"] = str(tmp_path)  # an empty instance (SQLite) outside the repository
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "deploy/workspace.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Validation successful for code location together_rl" in output


def test_helm_values_agree_with_the_instance_file_and_the_code() -> None:
    values = load(DEPLOY / "helm" / "values.yaml")
    instance = load(DEPLOY / "dagster.yaml")
    secrets = {
        doc["metadata"]["name"]: doc["stringData"]
        for doc in yaml.safe_load_all((DEPLOY / "helm" / "secrets.example.yaml").read_text())
    }
    # Only keys the chart's schema knows (top level and the daemon).
    assert set(values) <= {
        "global", "dagster-user-deployments", "postgresql", "generatePostgresqlPasswordSecret",
        "runLauncher", "dagsterDaemon", "dagsterWebserver", "retention", "telemetry",
        "concurrency", "computeLogManager", "pythonLogs", "serviceAccount", "ingress",
    }  # fmt: skip
    daemon = values["dagsterDaemon"]
    assert set(daemon) <= {
        "enabled", "runCoordinator", "runRetries", "runMonitoring", "sensors", "schedules",
        "env", "envSecrets", "resources", "heartbeatTolerance",
    }  # fmt: skip
    # The code location serves the module of workspace.yaml and gets the API key secret.
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == [
        "--module-name",
        "example_repo.definitions",
        "--working-directory",
        "/opt/dagster/app",
    ]
    assert {s["name"] for s in deployment["envSecrets"]} == {"together-api-key"}
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    assert {s["name"] for s in launcher["envSecrets"]} == {"together-api-key"}
    assert "TOGETHER_API_KEY" in secrets["together-api-key"]
    # Dagster's database password comes from the secret the chart reads.
    assert values["generatePostgresqlPasswordSecret"] is False
    assert "postgresql-password" in secrets[values["global"]["postgresqlSecretName"]]
    assert (
        values["postgresql"]["postgresqlScheme"]
        == (instance["storage"]["postgres"]["postgres_db"]["scheme"])
    )
    # Same queue, retries and sensor settings as deploy/dagster.yaml.
    queue = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    runs = instance["concurrency"]["runs"]
    assert queue["maxConcurrentRuns"] == runs["max_concurrent_runs"]
    assert queue["tagConcurrencyLimits"] == runs["tag_concurrency_limits"]
    assert daemon["runRetries"]["maxRetries"] == instance["run_retries"]["max_retries"]
    assert daemon["sensors"] == {
        "useThreads": instance["sensors"]["use_threads"],
        "numWorkers": instance["sensors"]["num_workers"],
    }
    # The daemon waits DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS for a tick; the sensors (in the
    # code server) read the same variable to fit their budget inside it: both must agree.
    daemon_env = {e["name"]: e["value"] for e in daemon["env"]}
    code_env = {e["name"]: e["value"] for e in deployment["env"]}
    timeout = daemon_env["DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS"]
    assert code_env["DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS"] == timeout and int(timeout) >= 60
