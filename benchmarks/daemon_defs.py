"""Definitions the real dagster-daemon loads for the latency benchmark (key and URL from env)."""

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    TogetherRLResource,
    build_checkpoint_sensor,
)


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
def bench_evaluation(context: dg.AssetExecutionContext) -> None:
    context.log.info(f"evaluating {context.partition_key}")


evaluation_job = dg.define_asset_job("bench_evaluation_job", selection=[bench_evaluation])

defs = dg.Definitions(
    assets=[CHECKPOINT_ASSET_SPEC, bench_evaluation],
    jobs=[evaluation_job],
    sensors=[
        build_checkpoint_sensor(
            job=evaluation_job,
            minimum_interval_seconds=1,
            default_status=dg.DefaultSensorStatus.RUNNING,
        )
    ],
    resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
)
