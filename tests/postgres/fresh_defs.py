"""Definitions of the fresh-container test: the sync and spend assets with no table setting at
all (so they default to the instance's PostgreSQL), and a sensor that requests one sync run
and one spend run per round the test asks for (``$RL_ROUNDS_FILE`` holds the round number).
"""

import os
from pathlib import Path

import dagster as dg

from rl_sessions_dagster import TogetherRLResource, build_spend_asset
from rl_sessions_dagster.assets import build_session_sync_asset

sync = build_session_sync_asset()
spend = build_spend_asset()
sync_job = dg.define_asset_job("rl_sync_job", selection=[sync])
spend_job = dg.define_asset_job("rl_spend_job", selection=[spend])


@dg.sensor(
    jobs=[sync_job, spend_job],
    minimum_interval_seconds=1,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
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


defs = dg.Definitions(
    assets=[sync, spend],
    jobs=[sync_job, spend_job],
    sensors=[rounds],
    resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
)
