"""Definitions loaded by the real dagster-daemon in test_daemon.py (key and base URL from env)."""

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    TogetherRLResource,
    build_checkpoint_sensor,
    build_session_status_sensor,
)


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
def evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"checkpoint": context.partition_key})


evaluation_job = dg.define_asset_job("evaluation_job", selection=[evaluation])


@dg.op
def report(context: dg.OpExecutionContext) -> None:
    context.log.info(f"report for {context.run.tags['together/session_id']}")


@dg.job
def report_job() -> None:
    report()


defs = dg.Definitions(
    assets=[CHECKPOINT_ASSET_SPEC, evaluation],
    jobs=[evaluation_job, report_job],
    sensors=[
        build_checkpoint_sensor(
            job=evaluation_job,
            minimum_interval_seconds=1,
            default_status=dg.DefaultSensorStatus.RUNNING,
        ),
        build_session_status_sensor(
            job=report_job,
            minimum_interval_seconds=1,
            default_status=dg.DefaultSensorStatus.RUNNING,
        ),
    ],
    resources={
        "together": TogetherRLResource(
            api_key=dg.EnvVar("TOGETHER_API_KEY"), max_attempts=2, backoff_max=0.5
        )
    },
)
