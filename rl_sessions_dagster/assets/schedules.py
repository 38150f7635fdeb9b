"""The Component's asset job and cron schedule for a table asset (the sync, the spend)."""

from typing import Any

import dagster as dg

from ..partitions import AssetJob


def table_job_and_schedule(
    asset: dg.AssetsDefinition,
    *,
    job_name: str | None = None,
    cron_schedule: str = "*/15 * * * *",
    schedule_name: str | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    run_config: dict[str, Any] | None = None,
) -> tuple[AssetJob, dg.ScheduleDefinition]:
    """An asset job refreshing ``asset`` and a schedule that runs it (STOPPED unless told)."""
    job = dg.define_asset_job(
        job_name or f"{asset.key.to_python_identifier()}_sync_job",
        selection=[asset],
        executor_def=dg.in_process_executor,  # one step: no second process to start
        description=f"Refresh {asset.key.to_user_string()} from the Together RL API.",
    )
    schedule = dg.ScheduleDefinition(
        name=schedule_name or f"{job.name}_schedule",
        cron_schedule=cron_schedule,
        job=job,
        run_config=run_config,
        default_status=default_status,
        description=f"Refresh {job.name} from the Together RL API.",
    )
    return job, schedule


def reconcile_schedule(
    asset: dg.AssetsDefinition,
    job: AssetJob,
    *,
    cron_schedule: str = "0 4 * * *",
    schedule_name: str | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
) -> dg.ScheduleDefinition:
    """The sync's reconciliation: the job with run config ``full: true``, on a slower cadence."""
    return dg.ScheduleDefinition(
        name=schedule_name or f"{job.name}_reconcile_schedule",
        cron_schedule=cron_schedule,
        job=job,
        run_config={"ops": {asset.op.name: {"config": {"full": True}}}},
        default_status=default_status,
        description=f"Walk the whole session list with {job.name} (full: true): brings in what "
        "the incremental runs cannot see and marks sessions the API no longer lists.",
    )
