"""Jobs and schedules for the table assets (the sessions sync, the spend): one asset job each
and a cron schedule, STOPPED until turned on, so a deploy never starts polling by surprise."""

from typing import Any

import dagster as dg

from ..partitions.jobs import AssetJob, Job

__all__ = ["build_sync_job_and_schedule", "build_sync_schedule"]


def _sync_job(asset: dg.AssetsDefinition, job_name: str | None) -> AssetJob:
    return dg.define_asset_job(
        job_name or f"{asset.key.to_python_identifier()}_sync_job",
        selection=[asset],
        description=f"Refresh {asset.key.to_user_string()} from the Together RL API.",
    )


def build_sync_schedule(
    asset_or_job: "dg.AssetsDefinition | Job",
    *,
    cron_schedule: str = "*/15 * * * *",
    name: str | None = None,
    job_name: str | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    run_config: dict[str, Any] | None = None,
    execution_timezone: str | None = None,
    tags: dict[str, str] | None = None,
) -> dg.ScheduleDefinition:
    """A schedule for a table asset, e.g. the sync or spend (every 15 minutes by default;
    STOPPED until turned on).

    Given the asset, it targets a job built by ``define_asset_job`` (``job_name``); include
    that job in your Definitions too, or use :func:`build_sync_job_and_schedule`.
    """
    job = (
        _sync_job(asset_or_job, job_name)
        if isinstance(asset_or_job, dg.AssetsDefinition)
        else asset_or_job
    )
    return dg.ScheduleDefinition(
        name=name or f"{job.name}_schedule",
        cron_schedule=cron_schedule,
        job=job,
        run_config=run_config,
        default_status=default_status,
        execution_timezone=execution_timezone,
        tags=tags,
        description=f"Refresh {job.name} from the Together RL API.",
    )


def build_sync_job_and_schedule(
    asset: dg.AssetsDefinition,
    *,
    job_name: str | None = None,
    cron_schedule: str = "*/15 * * * *",
    schedule_name: str | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    run_config: dict[str, Any] | None = None,
    execution_timezone: str | None = None,
) -> "tuple[AssetJob, dg.ScheduleDefinition]":
    """An asset job for a table asset (sync, spend) and a schedule that runs it."""
    job = _sync_job(asset, job_name)
    schedule = build_sync_schedule(
        job,
        cron_schedule=cron_schedule,
        name=schedule_name,
        default_status=default_status,
        run_config=run_config,
        execution_timezone=execution_timezone,
    )
    return job, schedule
