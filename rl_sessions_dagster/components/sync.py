"""The ``sync:`` section: the sessions table's asset, job, schedule and daily reconciliation."""

import dagster as dg
from pydantic import Field

from ..assets import build_session_sync_asset
from ..assets.schedules import reconcile_schedule, table_job_and_schedule
from .schema import Section
from .sensors import running_field, schedule_status


class SyncConfig(Section):
    """Frequent runs read what changed; a daily reconciliation walks the whole list."""

    enabled: bool = Field(default=True, description="false: no sync asset, job or schedule.")
    db_path: str | None = Field(
        default=None,
        description="This asset's own database (URL or path, $VARS expanded at run time); "
        "unset: the resource's.",
    )
    cron_schedule: str = Field(
        default="*/15 * * * *",
        min_length=1,
        description="When the sync runs (cron); each run reads only what can have changed.",
    )
    reconcile_cron_schedule: str | None = Field(
        default="0 4 * * *",
        min_length=1,
        description="When the reconciliation walks the whole list, marking sessions the API "
        "no longer lists (cron; null: never).",
    )
    running: bool = running_field()
    job_name: str | None = Field(
        default=None,
        description="Name of the sync job (default: from the asset key, "
        "together__rl_sessions_table_sync_job).",
    )

    def build(self, resource_key: str) -> dg.Definitions:
        asset = build_session_sync_asset(resource_key=resource_key, db_path=self.db_path)
        status = schedule_status(self.running)
        job, schedule = table_job_and_schedule(
            asset, job_name=self.job_name, cron_schedule=self.cron_schedule, default_status=status
        )
        schedules = [schedule]
        if cron := self.reconcile_cron_schedule:
            schedules.append(
                reconcile_schedule(asset, job, cron_schedule=cron, default_status=status)
            )
        return dg.Definitions(assets=[asset], jobs=[job], schedules=schedules)
