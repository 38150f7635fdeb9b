"""The ``idle_guard:`` and ``spend:`` sections, each off unless written."""

import dagster as dg
from pydantic import Field

from ..assets import build_spend_asset
from ..assets.schedules import table_job_and_schedule
from ..core.idle import IdlePolicy
from ..sensors import IdleGuardOptions, build_idle_guard
from .schema import Section
from .sensors import (
    copied_field,
    interval_field,
    options_section,
    running_field,
    schedule_status,
    sensor_knobs,
)
from .sync import SyncConfig

_GuardOptions = options_section(
    IdleGuardOptions, "IdleGuardOptionsConfig", {"resource_key", "spend_db_path"}
)


class IdleGuardConfig(_GuardOptions):  # type: ignore[valid-type,misc] # a derived model
    """:func:`~rl_sessions_dagster.build_idle_guard` in YAML. Dry run unless ``dry_run: false``."""

    enabled: bool = Field(default=True, description="false: no idle guard.")
    name: str = Field(
        default="together_rl_idle_guard",
        min_length=1,
        description="Name of the guard's job (its sensor: <name>_sensor).",
    )
    idle_seconds: float = copied_field(IdlePolicy, "idle_seconds")
    dry_run: bool = Field(default=True, description="Only report what stopping would save.")
    force: bool = copied_field(IdlePolicy, "force")
    created_by: str | None = copied_field(IdlePolicy, "created_by")
    allow_ids: list[str] = copied_field(IdlePolicy, "allow_ids")
    deny_ids: list[str] = copied_field(IdlePolicy, "deny_ids")
    allow_base_models: list[str] = copied_field(IdlePolicy, "allow_base_models")
    deny_base_models: list[str] = copied_field(IdlePolicy, "deny_base_models")
    minimum_interval_seconds: int = interval_field(300)
    running: bool = running_field()

    def build(self, resource_key: str, spend_db_path: str | None) -> dg.Definitions:
        policy = IdlePolicy(**self.model_dump(include=set(IdlePolicy.__dataclass_fields__)))
        options = IdleGuardOptions(
            resource_key=resource_key,
            spend_db_path=spend_db_path,
            **{name: getattr(self, name) for name in _GuardOptions.model_fields},
        )
        job, sensor = build_idle_guard(
            name=self.name,
            policy=policy,
            dry_run=self.dry_run,
            options=options,
            **sensor_knobs(self),
        )
        return dg.Definitions(jobs=[job], sensors=[sensor])


class SpendScheduleConfig(Section):
    """The spend asset (cost per resource, session and sweep) on a schedule."""

    enabled: bool = Field(default=True, description="false: no spend asset or schedule.")
    key: str = Field(
        default="together/rl_spend", min_length=1, description="Asset key of the spend asset."
    )
    db_path: str | None = copied_field(SyncConfig, "db_path")
    cron_schedule: str = Field(
        default="*/15 * * * *", min_length=1, description="When the spend asset refreshes (cron)."
    )
    running: bool = running_field(True, " On by default: spend only reads.")
    job_name: str = Field(
        default="together_rl_spend_job",
        min_length=1,
        description="Name of the spend job (its schedule: <job_name>_schedule).",
    )

    def build(self, resource_key: str, group_name: str | None) -> dg.Definitions:
        asset = build_spend_asset(
            key=dg.AssetKey.from_user_string(self.key),
            resource_key=resource_key,
            db_path=self.db_path,
            group_name=group_name,
        )
        job, schedule = table_job_and_schedule(
            asset,
            job_name=self.job_name,
            cron_schedule=self.cron_schedule,
            default_status=schedule_status(self.running),
        )
        return dg.Definitions(assets=[asset], jobs=[job], schedules=[schedule])
