"""Definitions the real dagster-daemon loads in test_daemon_restarts.py: one checkpoint sensor
and a cheap in-process evaluation job (key and base URL come from the environment)."""

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    TogetherRLResource,
    build_checkpoint_sensor,
)


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
def evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"checkpoint": context.partition_key})


evaluation_job = dg.define_asset_job(
    "evaluation_job", selection=[evaluation], executor_def=dg.in_process_executor
)

defs = dg.Definitions(
    assets=[CHECKPOINT_ASSET_SPEC, evaluation],
    jobs=[evaluation_job],
    sensors=[
        build_checkpoint_sensor(
            job=evaluation_job,
            minimum_interval_seconds=1,
            default_status=dg.DefaultSensorStatus.RUNNING,
        )
    ],
    resources={
        "together": TogetherRLResource(
            api_key=dg.EnvVar("TOGETHER_API_KEY"), max_attempts=2, backoff_max=0.5
        )
    },
)
