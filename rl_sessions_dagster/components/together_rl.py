"""``TogetherRLComponent``: the whole integration configured in a ``defs.yaml``.

What the Python builders wire by hand, from YAML: the resource (key read from an environment
variable at run time, never written to YAML), the checkpoint asset spec and its partitions,
one routed sensor (one poll of the API per interval, each event kind to its own asset
selection), and the scheduled sync table. ``dg list components`` shows it;
``dg scaffold defs rl_sessions_dagster.TogetherRLComponent my_rl`` writes a defs.yaml that
loads as is. Building the definitions makes no API call.
"""

from pathlib import Path
from typing import Any, Literal

import dagster as dg
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component, scaffold_with
from pydantic import BaseModel, Field

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
from .schema import Section, exact_model, templatable

SCAFFOLD_YAML = """\
type: {type_name}

attributes:
  resource:
    api_key_env: TOGETHER_API_KEY   # read when a run or tick needs it; never stored in YAML
    # Every table (sessions, checkpoints, spend) goes to one database. Unset: $RL_TABLES_URL,
    # else the Dagster instance's PostgreSQL (schema together_rl), else a SQLite file in
    # $DAGSTER_HOME (refused when runs start in new containers: Kubernetes, ECS, Docker).
    # database_url_env: RL_TABLES_URL
  sensor:
    name: together_rl_events
    minimum_interval_seconds: 30
    running: false                  # evaluations cost money: turn it on in the UI
    # announce: [checkpoint_registered]   # no routes needed: only add each checkpoint's
    #                                     # partition + runless materialization (eager() assets)
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


#: The session event kinds as YAML spells them (``EventKind`` values; a test keeps them equal).
EventKindName = Literal[
    "checkpoint_created",
    "checkpoint_registered",
    "session_stopped",
    "session_error",
    "session_expired",
    "session_status_changed",
]


class ResourceConfig(Section):
    """The ``TogetherRLResource``; the API key comes from ``api_key_env`` at use time."""

    api_key_env: str = Field(
        default="TOGETHER_API_KEY",
        min_length=1,
        description="Environment variable holding the API key (read at run/tick time; the "
        "key itself never goes in YAML).",
    )
    base_url: str | None = Field(
        default=None,
        description="API origin; default $TOGETHER_BASE_URL, then https://api.together.ai.",
    )
    request_timeout: float = Field(
        default=30.0, gt=0, le=600, description="Seconds per HTTP attempt."
    )
    max_attempts: int = Field(
        default=4,
        ge=1,
        le=20,
        description="Attempts per call on transport errors, 408, 429 and 5xx.",
    )
    database_url_env: str | None = Field(
        default=None,
        description="Environment variable holding the URL of the database every table goes "
        "to (sessions, checkpoints, spend). Unset: $RL_TABLES_URL if set, else the Dagster "
        "instance's PostgreSQL (schema together_rl), else $DAGSTER_HOME/together_rl_sync.sqlite.",
    )
    resource_key: str = Field(
        default="together", min_length=1, description="Key in Definitions.resources."
    )


class CheckpointAssetConfig(Section):
    """The external checkpoint asset (one partition per checkpoint)."""

    key: str = Field(
        default=CHECKPOINT_ASSET_KEY.to_user_string(),
        min_length=1,
        description="Asset key of the external checkpoint asset ('/'-separated).",
    )
    group_name: str | None = Field(
        default="together_rl",
        description="Asset group of this asset and the other assets the Component builds.",
    )
    materialize_on_event: bool = Field(
        default=True,
        description="Record a runless materialization per checkpoint event "
        "(for AutomationCondition.eager()).",
    )


class RouteConfig(Section):
    """Which event kinds run which assets (a Dagster asset selection string)."""

    event_kinds: list[EventKindName] = Field(
        min_length=1,
        description="Session events whose runs this route starts: checkpoint_created, "
        "checkpoint_registered, session_stopped, session_error, session_expired, "
        "session_status_changed. Each kind in at most one route.",
    )
    assets: str = Field(
        min_length=1, description="Asset selection, e.g. 'key:\"checkpoint_evaluation\"'."
    )
    job_name: str = Field(min_length=1, description="Name of the asset job the runs execute.")
    partitioned: bool | None = Field(
        default=None,
        description="Checkpoint runs carry the checkpoint partition key (default: yes when "
        "every kind is a checkpoint kind). The assets must use CHECKPOINT_PARTITIONS.",
    )


class SessionFilterConfig(Section):
    """Which sessions the sensor watches; every given field must match."""

    model_resources_id: str | None = Field(
        default=None, description="Only sessions on this model resource (sent to the API)."
    )
    created_by: str | None = Field(default=None, description='"me" or a user id.')
    display_name: str | None = Field(default=None, description='A glob, e.g. "sweep-*".')
    wandb_project: str | None = Field(
        default=None, description="Only sessions logging to this W&B project."
    )


class PollingConfig(Section):
    """:class:`~rl_sessions_dagster.PollingOptions` in YAML."""

    backfill: bool = Field(
        default=False,
        description="On the first tick, announce history too (default: only what happens next).",
    )
    max_runs_per_tick: int = Field(
        default=25,
        ge=1,
        le=1000,
        description="Most events a tick turns into runs; the rest follow next tick, in order.",
    )
    tick_budget_seconds: float = Field(
        default=40.0,
        gt=0,
        le=3600,
        description="Wall time a tick may spend on the API, retries included (kept 15 s "
        "under DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS).",
    )
    lookback_seconds: float = Field(
        default=600.0,
        gt=0,
        description="How far behind the newest session seen the finished-session scan reaches.",
    )
    registration_wait_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How long an unregistered checkpoint is re-checked.",
    )
    page_size: int = Field(default=100, ge=1, le=100, description="List page size (1-100).")
    unavailable_alarm_seconds: float = Field(
        default=600.0,
        gt=0,
        description="After this long with every tick failing to read the API, one tick fails "
        "loudly; the sensor keeps retrying.",
    )
    unordered_pages_per_tick: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Pages of a finished-session list with no time order read per tick.",
    )


class SensorConfig(Section):
    """The routed event sensor: one poll of the API per interval."""

    name: str = Field(
        default="together_rl_events",
        min_length=1,
        description="Sensor name; also the key of its cursor (renaming starts over).",
    )
    minimum_interval_seconds: int = Field(
        default=30, ge=1, le=86_400, description="Seconds between ticks (1 to 86400)."
    )
    running: bool = Field(default=False, description="Default status RUNNING (else STOPPED).")
    session_filter: SessionFilterConfig = Field(
        default=SessionFilterConfig(), description="Which sessions the sensor watches."
    )
    polling: PollingConfig = Field(
        default=PollingConfig(), description="How the sensor reads the API."
    )
    announce: list[Literal["checkpoint_registered", "checkpoint_created"]] = Field(
        default_factory=list,
        description="Checkpoint kinds announced even when no route runs them: the sensor adds "
        "the checkpoint's partition and records its runless materialization, so your assets "
        "can follow with AutomationCondition.eager(). With no routes, the sensor only announces.",
    )


class SyncConfig(Section):
    """The scheduled sync of sessions and checkpoints into the tables' database."""

    enabled: bool = Field(default=True, description="false: no sync asset, job or schedule.")
    db_path: str | None = Field(
        default=None,
        description="Override for this asset only (a URL or file path; $VARS expanded at run "
        "time). Leave unset: every table then goes to the resource's database_url_env.",
    )
    cron_schedule: str = Field(
        default="*/15 * * * *", min_length=1, description="When the sync runs (cron)."
    )
    running: bool = Field(default=False, description="Default status RUNNING (else STOPPED).")
    job_name: str | None = Field(
        default=None,
        description="Name of the sync job (default: from the asset key, "
        "together__rl_sessions_table_sync_job).",
    )


class TogetherRLScaffolder(Scaffolder):
    """Writes a defs.yaml that loads as is, with the routes to fill in shown as comments."""

    def scaffold(self, request: ScaffoldRequest[Any]) -> None:
        if request.scaffold_format != "yaml" or request.append:
            scaffold_component(request, {})
            return
        path = Path(request.target_path) / "defs.yaml"
        # replace, not format: the YAML has braces of its own ({type: numeric})
        path.write_text(SCAFFOLD_YAML.replace("{type_name}", request.type_name))


@scaffold_with(TogetherRLScaffolder)
class TogetherRLComponent(dg.Component, dg.Model, dg.Resolvable):
    """Together AI RL sessions in Dagster: resource, checkpoint asset, one routed event sensor
    (checkpoint registered, session stopped/error/expired → asset runs, one API poll per
    interval) and a scheduled sync table; optionally the GPUs: model-resource events routed to
    assets, the idle guard and the spend asset. No API call at load.
    """

    resource: ResourceConfig = Field(
        default=ResourceConfig(), description="The TogetherRLResource (API key from env)."
    )
    checkpoint_asset: CheckpointAssetConfig = Field(
        default=CheckpointAssetConfig(),
        description="The external checkpoint asset, one partition per checkpoint.",
    )
    sensor: SensorConfig = Field(
        default=SensorConfig(), description="The routed event sensor (one API poll per tick)."
    )
    routes: list[RouteConfig] = Field(
        default_factory=list,
        description="Which event kinds run which assets; each kind in at most one route.",
    )
    sync: SyncConfig = Field(
        default=SyncConfig(), description="The scheduled sync of sessions and checkpoints."
    )
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

    @classmethod
    def model(cls) -> type[BaseModel]:
        """Dagster's derived model, whose JSON schema (what ``dg check yaml`` and
        ``dg utils inspect-component`` read) is made exact by :func:`.schema.exact_schema`."""
        return exact_model(templatable(super().model()), cls)

    def build_resource(self) -> TogetherRLResource:
        res = self.resource
        return TogetherRLResource(
            api_key=dg.EnvVar(res.api_key_env),
            base_url=res.base_url,
            request_timeout=res.request_timeout,
            max_attempts=res.max_attempts,
            database_url=dg.EnvVar(res.database_url_env) if res.database_url_env else None,
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
        sensor, flt = self.sensor, self.sensor.session_filter
        if not routes and not sensor.announce:
            return None
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
            announce=sensor.announce,
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
