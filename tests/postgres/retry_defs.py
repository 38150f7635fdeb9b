"""Definitions for test_run_retries.py: an evaluation whose first run of each checkpoint fails
(a marker file per partition under ``$RL_FLAKY_DIR`` remembers it), in a job that asks the
daemon for up to two run retries."""

import os
from pathlib import Path

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    TogetherRLResource,
    build_checkpoint_sensor,
    checkpoint_id_for_partition,
)


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
def flaky_evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    # Named by checkpoint id: partition keys are "<session>/<step>/<id8>" (slashes).
    marker = Path(os.environ["RL_FLAKY_DIR"]) / checkpoint_id_for_partition(context)
    if not marker.exists():
        marker.write_text(context.run.run_id)
        raise RuntimeError("inference endpoint unavailable (the first run fails on purpose)")
    return dg.MaterializeResult(metadata={"first_failed_run": marker.read_text()})


evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=[flaky_evaluation],
    executor_def=dg.in_process_executor,
    tags={"dagster/max_retries": "2"},
)

defs = dg.Definitions(
    assets=[CHECKPOINT_ASSET_SPEC, flaky_evaluation],
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
