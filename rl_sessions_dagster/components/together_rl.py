"""``TogetherRLComponent``: the whole integration configured in a ``defs.yaml``.

What the Python builders wire by hand, from YAML: the resource (key read from an environment
variable at run time, never written to YAML), the checkpoint asset spec and its partitions,
one routed sensor (one poll of the API per interval, each event kind to its own asset
selection), and the scheduled sync table. ``dg list components`` shows it;
``dg scaffold defs rl_sessions_dagster.TogetherRLComponent my_rl`` writes a defs.yaml that
loads as is. Building the definitions makes no API call.
"""

from pathlib import Path
from typing import Any

import dagster as dg
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component, scaffold_with
from pydantic import Field

from ..assets import build_checkpoint_asset_spec, build_session_sync_asset
from ..assets.schedules import build_sync_job_and_schedule
from ..core import CHECKPOINT_EVENTS
from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS
from ..resource import TogetherRLResource
from ..sensors import EventRoute, PollingOptions, SessionFilter, build_routed_sensor
from ..sensors.options import event_kinds
from .champion import ChampionSection
from .evaluation import EvaluationSection
from .gpus import IdleGuardConfig, ResourceSensorConfig, SpendScheduleConfig, gpu_defs
from .report import ReportSection

SCAFFOLD_YAML = """\
type: {type_name}

attributes:
  resource:
    api_key_env: TOGETHER_API_KEY   # read when a run or tick needs it; never stored in YAML
  sensor:
    name: together_rl_events
    minimum_interval_seconds: 30
    running: false                  # evaluations cost money: turn it on in the UI
  # One sensor, one poll of the API per interval; each event kind goes to one selection.
  # A checkpoint route's assets must use partitions_def=CHECKPOINT_PARTITIONS.
  routes: []
  # routes:
  #   - event_kinds: [checkpoint_registered]
  #     assets: 'key:"checkpoint_evaluation"'
  #     job_name: evaluate_checkpoint
  #   - event_kinds: [session_stopped, session_error, session_expired]
  #     assets: 'key:"session_report"'
  #     job_name: finished_session_report
  sync:
    enabled: true
    cron_schedule: "*/15 * * * *"
    # db_path: /data/together_rl_sync.sqlite   # default: $DAGSTER_HOME/together_rl_sync.sqlite
  # The GPUs (each section optional):
  # resource_sensor:                # model-resource events, one poll for all routes
  #   running: false
  #   routes:
  #     - event_kinds: [resource_ready, resource_error, resource_stopped, resource_expiring]
  #       assets: 'key:"gpu_notices"'
  #       job_name: gpu_notice
  # idle_guard:                     # stops READY resources with no session for idle_seconds
  #   idle_seconds: 1800
  #   dry_run: true                 # only report what stopping would save
  # spend:                          # cost per resource, session and sweep, on a schedule
  #   cron_schedule: "0 * * * *"
  # evaluation:                     # built-in evaluation of each registered checkpoint; routes
  #   dataset: eval.jsonl           # checkpoint_registered to it (remove that kind from routes)
  #   graders: [{type: numeric}]    # exact, contains, regex, numeric, json_field, pkg.mod:fn
  #   concurrency: 8
  #   tolerance: 0.05               # score check: fail on a bigger drop vs the previous checkpoint
"""


class ResourceConfig(dg.Model, dg.Resolvable):
    """The ``TogetherRLResource``; the API key comes from ``api_key_env`` at use time."""

    api_key_env: str = Field(
        default="TOGETHER_API_KEY", description="Environment variable holding the API key."
    )
    base_url: str | None = Field(
        default=None,
        description="API origin; default $TOGETHER_BASE_URL, then https://api.together.ai.",
    )
    request_timeout: float = 30.0
    max_attempts: int = 4
    resource_key: str = Field(default="together", description="Key in Definitions.resources.")


class CheckpointAssetConfig(dg.Model, dg.Resolvable):
    """The external checkpoint asset (one partition per checkpoint)."""

    key: str = Field(default=CHECKPOINT_ASSET_KEY.to_user_string())
    group_name: str | None = "together_rl"
    materialize_on_event: bool = Field(
        default=True,
        description="Record a runless materialization per checkpoint event "
        "(for AutomationCondition.eager()).",
    )


class RouteConfig(dg.Model, dg.Resolvable):
    """Which event kinds run which assets (a Dagster asset selection string)."""

    event_kinds: list[str]
    assets: str = Field(description="Asset selection, e.g. 'key:\"checkpoint_evaluation\"'.")
    job_name: str = Field(description="Name of the asset job the runs execute.")
    partitioned: bool | None = Field(
        default=None,
        description="Checkpoint runs carry the checkpoint partition key (default: yes when "
        "every kind is a checkpoint kind). The assets must use CHECKPOINT_PARTITIONS.",
    )


class SessionFilterConfig(dg.Model, dg.Resolvable):
    """Which sessions the sensor watches; every given field must match."""

    model_resources_id: str | None = None
    created_by: str | None = Field(default=None, description='"me" or a user id.')
    display_name: str | None = Field(default=None, description='A glob, e.g. "sweep-*".')
    wandb_project: str | None = None


class PollingConfig(dg.Model, dg.Resolvable):
    """:class:`~rl_sessions_dagster.PollingOptions` in YAML."""

    backfill: bool = False
    max_runs_per_tick: int = 25
    tick_budget_seconds: float = 40.0
    lookback_seconds: float = 600.0
    registration_wait_seconds: float = 3600.0
    page_size: int = 100
    unavailable_alarm_seconds: float = 600.0
    unordered_pages_per_tick: int = 8


class SensorConfig(dg.Model, dg.Resolvable):
    name: str = "together_rl_events"
    minimum_interval_seconds: int = 30
    running: bool = Field(default=False, description="Default status RUNNING (else STOPPED).")
    session_filter: SessionFilterConfig = SessionFilterConfig()
    polling: PollingConfig = PollingConfig()


class SyncConfig(dg.Model, dg.Resolvable):
    """The scheduled sync of sessions and checkpoints into a SQLite table."""

    enabled: bool = True
    db_path: str | None = Field(
        default=None, description="SQLite file; default $DAGSTER_HOME/together_rl_sync.sqlite."
    )
    cron_schedule: str = "*/15 * * * *"
    running: bool = Field(default=False, description="Default status RUNNING (else STOPPED).")
    job_name: str | None = None


class TogetherRLScaffolder(Scaffolder):
    """Writes a defs.yaml that loads as is, with the routes to fill in shown as comments."""

    def scaffold(self, request: ScaffoldRequest[Any]) -> None:
        if request.scaffold_format != "yaml" or request.append:
            scaffold_component(request, {})
            return
        path = Path(request.target_path) / "defs.yaml"
        path.write_text(SCAFFOLD_YAML.format(type_name=request.type_name))


@scaffold_with(TogetherRLScaffolder)
class TogetherRLComponent(dg.Component, dg.Model, dg.Resolvable):
    """Together AI RL sessions in Dagster: resource, checkpoint asset, one routed event sensor
    (checkpoint registered, session stopped/error/expired → asset runs, one API poll per
    interval) and a scheduled sync table; optionally the GPUs: model-resource events routed to
    assets, the idle guard and the spend asset. No API call at load.
    """

    resource: ResourceConfig = ResourceConfig()
    checkpoint_asset: CheckpointAssetConfig = CheckpointAssetConfig()
    sensor: SensorConfig = SensorConfig()
    routes: list[RouteConfig] = Field(default_factory=list)
    sync: SyncConfig = SyncConfig()
    resource_sensor: ResourceSensorConfig | None = Field(
        default=None, description="Model-resource events (ready, error, stopped, ...) to assets."
    )
    idle_guard: IdleGuardConfig | None = Field(
        default=None, description="Stop (or, dry run, report) READY resources left idle."
    )
    spend: SpendScheduleConfig | None = Field(
        default=None, description="Estimated GPU cost per resource, session and sweep."
    )
    evaluation: EvaluationSection | None = Field(
        default=None,
        description="Built-in evaluation of every registered checkpoint (dataset, graders, "
        "score check), routed from the sensor's checkpoint_registered events.",
    )
    # -- issue #19: report and champion (components/report.py, components/champion.py) --
    report: ReportSection | None = Field(
        default=None,
        description="One report per finished session (status, error, steps, checkpoints "
        "with scores, spend, W&B link), routed from the terminal session events.",
    )
    champion: ChampionSection | None = Field(
        default=None,
        description="The best evaluated checkpoint of each sweep, by one metric; "
        "champion_changed routed to an asset selection.",
    )

    def _report_and_champion_defs(self, checkpoint_key: dg.AssetKey) -> dg.Definitions:
        """The report and champion sections' definitions (each optional)."""
        evaluation_key = self.evaluation.key if self.evaluation is not None else None
        spend_db = self.spend.db_path if self.spend is not None else None
        parts = []
        if self.report is not None and self.report.enabled:
            report = self.report.build(
                resource_key=self.resource.resource_key,
                group_name=self.checkpoint_asset.group_name,
                evaluation_key=evaluation_key,
                spend_db_path=spend_db,
            )
            parts.append(dg.Definitions(assets=[report]))
        if self.champion is not None:
            parts.append(
                self.champion.build(
                    evaluation_key=evaluation_key,
                    checkpoint_asset_key=checkpoint_key,
                    group_name=self.checkpoint_asset.group_name,
                )
            )
        return dg.Definitions.merge(*parts) if parts else dg.Definitions()

    # -- end of issue #19 block --

    def build_resource(self) -> TogetherRLResource:
        res = self.resource
        return TogetherRLResource(
            api_key=dg.EnvVar(res.api_key_env),
            base_url=res.base_url,
            request_timeout=res.request_timeout,
            max_attempts=res.max_attempts,
        )

    def build_routes(self) -> list[EventRoute]:
        routes = []
        for route in self.routes:
            kinds = event_kinds(route.event_kinds)
            partitioned = route.partitioned
            if partitioned is None:
                partitioned = kinds <= CHECKPOINT_EVENTS
            routes.append(
                EventRoute(
                    event_kinds=kinds,
                    assets=dg.AssetSelection.from_string(route.assets),
                    job_name=route.job_name,
                    partitions_def=CHECKPOINT_PARTITIONS if partitioned else None,
                )
            )
        if self.evaluation is not None:
            routes += self.evaluation.routes(routes)
        if self.report is not None:  # issue #19
            routes += self.report.routes(routes)
        return routes

    def build_sensor(self) -> dg.SensorDefinition | None:
        routes = self.build_routes()
        if not routes:
            return None
        sensor, flt = self.sensor, self.sensor.session_filter
        return build_routed_sensor(
            name=sensor.name,
            routes=routes,
            resource_key=self.resource.resource_key,
            session_filter=SessionFilter(
                model_resources_id=flt.model_resources_id,
                created_by=flt.created_by,
                display_name=flt.display_name,
                wandb_project=flt.wandb_project,
            ),
            checkpoint_asset_key=(
                dg.AssetKey.from_user_string(self.checkpoint_asset.key)
                if self.checkpoint_asset.materialize_on_event
                else None
            ),
            options=PollingOptions(**sensor.polling.model_dump()),
            minimum_interval_seconds=sensor.minimum_interval_seconds,
            default_status=(
                dg.DefaultSensorStatus.RUNNING if sensor.running else dg.DefaultSensorStatus.STOPPED
            ),
        )

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        assets: list[Any] = [
            build_checkpoint_asset_spec(
                dg.AssetKey.from_user_string(self.checkpoint_asset.key),
                group_name=self.checkpoint_asset.group_name,
            )
        ]
        jobs: list[Any] = []
        schedules: list[dg.ScheduleDefinition] = []
        if self.sync.enabled:
            sync_asset = build_session_sync_asset(
                resource_key=self.resource.resource_key, db_path=self.sync.db_path
            )
            job, schedule = build_sync_job_and_schedule(
                sync_asset,
                job_name=self.sync.job_name,
                cron_schedule=self.sync.cron_schedule,
                default_status=(
                    dg.DefaultScheduleStatus.RUNNING
                    if self.sync.running
                    else dg.DefaultScheduleStatus.STOPPED
                ),
            )
            assets.append(sync_asset)
            jobs.append(job)
            schedules.append(schedule)
        sensor = self.build_sensor()
        key = self.resource.resource_key
        if self.evaluation is not None and self.evaluation.enabled:
            assets.append(
                self.evaluation.build(
                    base_dir=context.path,
                    resource_key=key,
                    group_name=self.checkpoint_asset.group_name,
                    checkpoint_asset_key=dg.AssetKey.from_user_string(self.checkpoint_asset.key),
                    baselines=(  # issue #19: also against the sweep's champion
                        self.champion.baselines(
                            dg.AssetKey.from_user_string(self.checkpoint_asset.key)
                        )
                        if self.champion is not None
                        else []
                    ),
                )
            )
        return dg.Definitions.merge(
            dg.Definitions(
                assets=assets,
                jobs=jobs,
                schedules=schedules,
                sensors=[sensor] if sensor is not None else [],
                resources={key: self.build_resource()},
            ),
            gpu_defs(
                key,
                self.checkpoint_asset.group_name,
                self.resource_sensor,
                self.idle_guard,
                self.spend,
            ),
            self._report_and_champion_defs(  # issue #19
                dg.AssetKey.from_user_string(self.checkpoint_asset.key)
            ),
        )
