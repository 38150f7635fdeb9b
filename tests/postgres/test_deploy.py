"""The deployment files in ``deploy/`` load the way Dagster loads them.

``dagster.yaml`` becomes a real instance on the test PostgreSQL (secrets from the environment,
as in production); ``workspace.yaml`` goes through Dagster's workspace loading and names code
that loads; the Helm values agree with both and with the tags the sensors really set. (Helm
itself is not run here: the chart is not available offline.)
"""

import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config
from dagster._core.workspace.load import location_origins_from_yaml_paths

from rl_sessions_dagster.core.events import EventKind
from rl_sessions_dagster.sensors.run_requests import TAG_PREFIX

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture
def pg_env(monkeypatch, pg_server, pg_database) -> dict[str, str]:
    env = {
        "DAGSTER_PG_HOST": pg_server.host,
        "DAGSTER_PG_PORT": str(pg_server.port),
        "DAGSTER_PG_USER": pg_server.user,
        "DAGSTER_PG_PASSWORD": pg_server.password,
        "DAGSTER_PG_DB": pg_database,
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
        result = dg.materialize([dg.asset(name="deploy_probe")(lambda: 1)], instance=instance)
        assert result.success
    runs = pg_server.psql("SELECT count(*) FROM runs", pg_env["DAGSTER_PG_DB"]).strip()
    assert runs == "1"


def test_the_evaluation_tag_limit_matches_the_tag_the_sensor_sets() -> None:
    (limit,) = load(DEPLOY / "dagster.yaml")["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit["key"] == f"{TAG_PREFIX}event"
    assert limit["value"] == EventKind.CHECKPOINT_REGISTERED.value


def test_workspace_yaml_loads_the_example_code_location() -> None:
    (origin,) = location_origins_from_yaml_paths([str(DEPLOY / "workspace.yaml")])
    assert origin.location_name == "together_rl"
    target = origin.loadable_target_origin
    assert target.module_name == "example_repo.definitions"
    # The module that location names loads from the repository root (the image's WORKDIR)
    # and its definitions resolve (no API call).
    sys.path.insert(0, str(ROOT))
    try:
        module = importlib.import_module(target.module_name)
    finally:
        sys.path.remove(str(ROOT))
    defs: dg.Definitions = module.defs
    dg.Definitions.validate_loadable(defs)
    assert {s.name for s in defs.sensors or []} >= {"evaluate_new_checkpoints"}


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
    assert deployment["dagsterApiGrpcArgs"] == ["--module-name", "example_repo.definitions"]
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
