"""The one definitions module of every test (and benchmark) that runs a real Dagster process:
``dagster-daemon`` with a workspace naming ``tests.daemon_defs``, or
``dagster api grpc --module-name tests.daemon_defs``.

``$RL_TEST_DEFS`` chooses the definitions (``daemon_env`` writes it with the rest of the
environment); the API key and base URL come from ``$TOGETHER_API_KEY`` and
``$TOGETHER_BASE_URL``, as a user's deployment has them. The daemon, its code server and every
run worker inherit the environment, so each process loads the same definitions.

- ``sessions`` (default): the checkpoint and session-status sensors, an evaluation asset and a
  report job (tests/sensors/test_daemon.py, test_daemon_cursor.py).
- ``restarts``: the checkpoint sensor and an in-process evaluation job
  (tests/reliability/test_daemon_restarts.py).
- ``retries``: an evaluation whose first run of each checkpoint fails (a marker file per
  checkpoint under ``$RL_FLAKY_DIR`` remembers it), in a job asking the daemon for up to two
  run retries (tests/postgres/test_run_retries.py).
- ``training``: a model resource of ``TRIGGER_MODEL`` becoming READY starts a training run on
  ``TRAIN_MODEL`` (which provisions its own resource); the run trains until the test
  terminates it (tests/sensors/test_daemon_resources.py).
- ``rounds``: the sync and spend assets with no table setting (so they default to the
  instance's PostgreSQL), and a sensor requesting one sync and one spend run per round the test
  asks for in ``$RL_ROUNDS_FILE`` (tests/postgres/test_fresh_containers.py).
- ``bench``: the checkpoint sensor and a logging evaluation in an in-process job (multiprocess
  with ``$RL_BENCH_EXECUTOR=multiprocess``), the resource's default retries
  (benchmarks/daemon.py, benchmarks/postgres.py).
"""

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    EventKind,
    EventRoute,
    TogetherRLResource,
    TrainingLaunchConfig,
    build_model_resource_sensor,
    build_session_sensor,
    build_spend_asset,
    checkpoint_id_for_partition,
)
from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.core.events import TERMINAL_EVENTS
from rl_sessions_dagster.sensors import ResourceFilter, ResourceRoute

#: The variable naming the definitions to load.
DEFS_ENV = "RL_TEST_DEFS"
TRIGGER_MODEL = "Qwen/Qwen3-32B"
TRAIN_MODEL = "Qwen/Qwen3-8B"

#: Every sensor here ticks each second from the daemon's start.
RUNNING: dict[str, Any] = {
    "minimum_interval_seconds": 1,
    "default_status": dg.DefaultSensorStatus.RUNNING,
}


def daemon_env(variant: str, base_url: str, api_key: str, **extra: str) -> dict[str, str]:
    """The environment a daemon (or code server) needs to load ``variant`` against a simulator."""
    return {DEFS_ENV: variant, "TOGETHER_API_KEY": api_key, "TOGETHER_BASE_URL": base_url, **extra}


def _resource(**options: Any) -> dict[str, TogetherRLResource]:
    return {"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"), **options)}


#: Few, short retries: a test's faults cost seconds, not minutes.
_TEST_RESOURCE = {"max_attempts": 2, "backoff_max": 0.5}


def _evaluation_asset() -> dg.AssetsDefinition:
    @dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
    def evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={"checkpoint": context.partition_key})

    return evaluation


def _checkpoint_defs(asset: dg.AssetsDefinition, job: Any, **resource: Any) -> dg.Definitions:
    return dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, asset],
        jobs=[job],
        sensors=[
            build_session_sensor(
                name="together_rl_checkpoint_sensor",
                routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=job)],
                **RUNNING,
            )
        ],
        resources=_resource(**resource),
    )


def sessions() -> dg.Definitions:
    evaluation = _evaluation_asset()
    evaluation_job = dg.define_asset_job("evaluation_job", selection=[evaluation])

    @dg.op
    def report(context: dg.OpExecutionContext) -> None:
        context.log.info(f"report for {context.run.tags['together/session_id']}")

    @dg.job
    def report_job() -> None:
        report()

    return dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, evaluation],
        jobs=[evaluation_job, report_job],
        sensors=[
            build_session_sensor(
                name="together_rl_checkpoint_sensor",
                routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
                **RUNNING,
            ),
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
                **RUNNING,
            ),
        ],
        resources=_resource(**_TEST_RESOURCE),
    )


def restarts() -> dg.Definitions:
    evaluation = _evaluation_asset()
    job = dg.define_asset_job(
        "evaluation_job", selection=[evaluation], executor_def=dg.in_process_executor
    )
    return _checkpoint_defs(evaluation, job, **_TEST_RESOURCE)


def retries() -> dg.Definitions:
    @dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
    def flaky_evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        # Named by checkpoint id: partition keys are "<session>/<step>/<id8>" (slashes).
        marker = Path(os.environ["RL_FLAKY_DIR"]) / checkpoint_id_for_partition(context)
        if not marker.exists():
            marker.write_text(context.run.run_id)
            raise RuntimeError("inference endpoint unavailable (the first run fails on purpose)")
        return dg.MaterializeResult(metadata={"first_failed_run": marker.read_text()})

    job = dg.define_asset_job(
        "evaluation_job",
        selection=[flaky_evaluation],
        executor_def=dg.in_process_executor,
        tags={"dagster/max_retries": "2"},
    )
    return _checkpoint_defs(flaky_evaluation, job, **_TEST_RESOURCE)


def training() -> dg.Definitions:
    @dg.op
    def together_rl_training(
        context: dg.OpExecutionContext, config: TrainingLaunchConfig, together: TogetherRLResource
    ) -> None:
        with config.launch(context, together) as launched:
            context.log.info(f"training on {launched.session_id}")
            for _ in range(3000):  # at most ~5 minutes; the test terminates the run long before
                time.sleep(0.1)

    @dg.job
    def training_job() -> None:
        together_rl_training()

    def with_config(event, request):
        config = {"base_model": TRAIN_MODEL, "reuse_ready_resource": False,
                  "poll_interval_seconds": 0.2, "display_name": f"on-{event.resource_id[:8]}"}  # fmt: skip
        return request.with_replaced_attrs(
            run_config={"ops": {"together_rl_training": {"config": config}}}
        )

    sensor = build_model_resource_sensor(
        routes=[ResourceRoute(["resource_ready"], job=training_job, run_request_fn=with_config)],
        resource_filter=ResourceFilter(base_model=TRIGGER_MODEL),
        **RUNNING,
    )
    return dg.Definitions(
        jobs=[training_job], sensors=[sensor], resources=_resource(**_TEST_RESOURCE)
    )


def rounds() -> dg.Definitions:
    sync = build_session_sync_asset()
    spend = build_spend_asset()
    sync_job = dg.define_asset_job("rl_sync_job", selection=[sync])
    spend_job = dg.define_asset_job("rl_spend_job", selection=[spend])

    @dg.sensor(jobs=[sync_job, spend_job], **RUNNING)
    def rounds(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        wanted = int(Path(os.environ["RL_ROUNDS_FILE"]).read_text().strip() or "0")
        done = int(context.cursor or "0")
        if done >= wanted:
            return dg.SkipReason(f"round {done} requested already")
        n = done + 1
        tags = {"rl/round": str(n)}
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(run_key=f"sync-{n}", job_name=sync_job.name, tags=tags),
                dg.RunRequest(run_key=f"spend-{n}", job_name=spend_job.name, tags=tags),
            ],
            cursor=str(n),
        )

    return dg.Definitions(
        assets=[sync, spend], jobs=[sync_job, spend_job], sensors=[rounds], resources=_resource()
    )


def bench() -> dg.Definitions:
    @dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
    def bench_evaluation(context: dg.AssetExecutionContext) -> None:
        context.log.info(f"evaluating {context.partition_key}")

    # The library's jobs run in process; $RL_BENCH_EXECUTOR=multiprocess measures the default.
    multi = os.environ.get("RL_BENCH_EXECUTOR") == "multiprocess"
    executor = dg.multiprocess_executor if multi else dg.in_process_executor
    job = dg.define_asset_job(
        "bench_evaluation_job", selection=[bench_evaluation], executor_def=executor
    )
    return _checkpoint_defs(bench_evaluation, job)


VARIANTS: Mapping[str, Callable[[], dg.Definitions]] = {
    "sessions": sessions,
    "restarts": restarts,
    "retries": retries,
    "training": training,
    "rounds": rounds,
    "bench": bench,
}

defs = VARIANTS[os.environ.get(DEFS_ENV, "sessions")]()
