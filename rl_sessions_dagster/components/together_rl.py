"""``TogetherRLComponent``: the whole integration from one ``defs.yaml``, a section per piece;
``dg scaffold defs`` writes one that loads as is. Building the definitions makes no API call."""

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar

import dagster as dg
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component, scaffold_with
from pydantic import BaseModel, Field, create_model

from ..api import API_KEY_ENV
from ..assets import CHECKPOINT_ASSET_SPEC
from ..partitions import CHECKPOINT_ASSET_KEY, EVALUATION_ASSET_KEY
from ..resource import TogetherRLResource
from .champion import ChampionSection, recorded_metrics
from .checks import check_crons, check_unique_names, is_on, located_errors
from .evaluation import EvaluationSection
from .gpus import IdleGuardConfig, SpendScheduleConfig
from .report import ReportSection
from .schema import Section, exact
from .sensors import ResourceSensorSection, SessionSensorSection, section_route
from .sync import SyncConfig
from .translation import (
    Derived,
    ResolvedTogetherRLTranslationFn,
    TogetherRLAssetProps,
    TogetherRLTranslator,
    schedule_freshness,
    translate,
)

SCAFFOLD_YAML = """\
type: {type_name}

attributes:
  resource:                         # every field of TogetherRLResource; secrets by env var
    api_key_env: TOGETHER_API_KEY   # read when a run or tick needs it; never stored in YAML
    # Every table goes to one database: $RL_TABLES_URL, else the instance's PostgreSQL (schema
    # together_rl), else a SQLite file in $DAGSTER_HOME (refused for per-run containers).
    # database_url_env: RL_TABLES_URL
  # Session events: one sensor, one poll of the API per interval; each event kind goes to
  # one selection. A checkpoint route's assets must use partitions_def=CHECKPOINT_PARTITIONS.
  sessions:
    name: together_rl_events
    minimum_interval_seconds: 30
    running: false                  # evaluations cost money: turn it on in the UI
    # announce: [checkpoint_registered]   # partition + runless materialization, no route
    routes: []
    # routes:
    #   - event_kinds: [checkpoint_registered]
    #     assets: 'key:"checkpoint_evaluation"'
    #     job_name: evaluate_checkpoint
  sync:
    enabled: true
    cron_schedule: "*/15 * * * *"
    running: false                  # the schedule starts STOPPED: true to fill the table
  # The GPUs (each section optional):
  # model_resources:                # model-resource events, the same shape as sessions:
  #   running: false
  #   routes:
  #     - event_kinds: [resource_ready, resource_error, resource_stopped, resource_expiring]
  #       assets: 'key:"gpu_notices"'
  #       job_name: gpu_notice
  # idle_guard:                     # stops READY resources with no session for idle_seconds
  #   idle_seconds: 1800
  #   dry_run: true                 # only report what stopping would save
  # spend:                          # cost per resource, session and sweep, on a schedule
  #   cron_schedule: "0 * * * *"    # runs by default (spend only reads); running: false
  # evaluation:                     # built-in evaluation of each registered checkpoint; routes
  #   dataset: eval.jsonl           # checkpoint_registered to it (remove that kind from routes)
  #   graders: [{type: numeric}]    # exact, contains, regex, numeric, json_field, pkg.mod:fn
  #   concurrency: 8
  #   tolerance: 0.05               # score check: warn on a bigger drop vs the previous checkpoint
  # report:                         # one report per STOPPED / ERROR / EXPIRED session, routed
  #   job_name: finished_session_report   # from the sessions sensor (remove those kinds above)
  # champion:                       # the best evaluated checkpoint of each sweep (W&B group,
  #   metric: score                 # else the display name up to its last '-')
  #   direction: higher
  #   running: false                # the champion sensor; reads evaluations, no API call
  #   # on_change: {assets: 'key:"deploy_champion"', job_name: deploy}   # one run per tick
  #   #                             # that ends with a new champion (two changes: one run)
"""


#: Bounds ``dg check yaml`` checks (the resource takes any value of each type).
_BOUNDS: dict[str, dict[str, Any]] = {
    "request_timeout": {"gt": 0, "le": 600},
    "max_attempts": {"ge": 1, "le": 20},
    "backoff_initial": {"ge": 0, "le": 600},
    "backoff_max": {"ge": 0, "le": 3600},
    "backoff_jitter": {"ge": 0, "le": 600},
    "retry_after_cap": {"ge": 0, "le": 3600},
    "call_deadline": {"gt": 0, "le": 86_400},
}

_SECRETS = [
    name
    for name, info in TogetherRLResource.model_fields.items()
    if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("dagster__is_secret")
]


class _ResourceSectionBase(Section):
    """The resource in YAML, derived from its fields; a secret is named by its environment
    variable (``<field>_env``) and becomes a ``dg.EnvVar``, read at run and tick time."""

    refused = {
        name: f"'{name}' is never written in YAML: name the environment variable holding it "
        f"with {name}_env"
        for name in _SECRETS
    }

    def build(self) -> TogetherRLResource:
        values = {name: getattr(self, name) for name in type(self).model_fields}
        for name in _SECRETS:
            env = values.pop(f"{name}_env")
            values[name] = dg.EnvVar(env) if env else None
        return TogetherRLResource(**values)


def _derived_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, info in TogetherRLResource.model_fields.items():
        if name in _SECRETS:
            fields[f"{name}_env"] = (
                str | None,
                Field(
                    default=API_KEY_ENV if name == "api_key" else None,
                    min_length=1,
                    description=f"Environment variable holding {name}, read at run and tick "
                    f"time (the value never goes in YAML). {info.description or ''}".strip(),
                ),
            )
        else:
            fields[name] = (
                info.annotation,
                Field(default=info.default, description=info.description, **_BOUNDS.get(name, {})),
            )
    return fields


ResourceSection = create_model(
    "ResourceSection", __base__=_ResourceSectionBase, __module__=__name__, **_derived_fields()
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
        default=True, description="Record a runless materialization per checkpoint event (eager())."
    )
    stale_after_minutes: int | None = Field(
        default=None,
        ge=1,
        description="Freshness: the asset fails when no checkpoint of any session arrived for "
        "this long (asset-level, not per session: leave unset while no session trains).",
    )

    def freshness(self) -> dg.FreshnessPolicy | None:
        if minutes := self.stale_after_minutes:
            return dg.FreshnessPolicy.time_window(fail_window=timedelta(minutes=minutes))
        return None


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
class TogetherRLComponent(dg.Component, dg.Model, dg.Resolvable, TogetherRLTranslator):
    """Together AI RL sessions in Dagster: resource, checkpoint asset, session-event sensor and
    sync table; optionally GPU sensor, idle guard, spend, evaluation, report and champion."""

    resource_key: str = Field(
        default="together", min_length=1, description="Key of the resource in Definitions."
    )
    resource: Annotated[
        TogetherRLResource,
        dg.Resolver(
            lambda context, model: ResourceSection.resolve_from_model(context, model).build(),
            model_field_type=ResourceSection.model(),
            description="Any TogetherRLResource field; secrets by env var (api_key_env, ...).",
        ),
    ] = Field(default_factory=lambda: ResourceSection().build())
    checkpoint_asset: CheckpointAssetConfig = Field(
        default_factory=CheckpointAssetConfig,
        description="The external checkpoint asset, one partition per checkpoint.",
    )
    sessions: SessionSensorSection = Field(
        default_factory=SessionSensorSection, description="Session events to assets: one sensor."
    )
    sync: SyncConfig = Field(
        default_factory=SyncConfig, description="The scheduled sync of sessions and checkpoints."
    )
    model_resources: ResourceSensorSection | None = Field(
        default=None, description="Model-resource events (ready, error, ...) to assets: one sensor."
    )
    idle_guard: IdleGuardConfig | None = Field(
        default=None, description="Stop (or, dry run, report) READY resources left idle."
    )
    spend: SpendScheduleConfig | None = Field(
        default=None, description="Estimated GPU cost per resource, session and sweep."
    )
    evaluation: EvaluationSection | None = Field(
        default=None, description="Built-in evaluation of every registered checkpoint."
    )
    report: ReportSection | None = Field(
        default=None, description="One report per finished session, from its terminal event."
    )
    champion: ChampionSection | None = Field(
        default=None, description="The best evaluated checkpoint of each sweep, by one metric."
    )
    translation: ResolvedTogetherRLTranslationFn | None = Field(
        default=None,
        description="AssetSpec attributes for every asset the Component makes, templated with "
        "props.role (checkpoint, sessions_table, spend, evaluation, report, champion) and spec.",
    )

    #: Checks across sections that ``dg check yaml`` makes (the schema of the whole YAML).
    schema_all_of: ClassVar[list[dict[str, Any]]] = [
        recorded_metrics("champion"),
        recorded_metrics("report"),
    ]

    @classmethod
    def model(cls) -> type[BaseModel]:
        return exact(super().model(), cls)

    def get_asset_spec(self, props: TogetherRLAssetProps) -> dg.AssetSpec:
        """Each asset's spec: ``translation:`` over the library's. Override to rewrite in Python."""
        return self.translation(props.spec, props) if self.translation else props.spec

    def _translated(
        self,
        defs: dg.Definitions,
        role: str,
        fresh: dg.FreshnessPolicy | None = None,
        deps: Sequence[dg.AssetKey] = (),
    ) -> dg.Definitions:
        if fresh is not None or deps:
            defs = translate(defs, role, Derived(fresh, deps))
        return translate(defs, role, self)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        check_unique_names(self, context.path)
        check_crons(self, context.path)
        rk, group = self.resource_key, self.checkpoint_asset.group_name
        key = dg.AssetKey.from_user_string(self.checkpoint_asset.key)
        eval_key = getattr(self.evaluation, "key", None) or EVALUATION_ASSET_KEY.to_user_string()
        # Spans seen by the resource sensor and the guard go where the spend asset reads them.
        spans_db = self.spend.db_path if is_on(self.spend) else None
        routes = [r.route() for r in self.sessions.routes]
        checkpoint = CHECKPOINT_ASSET_SPEC.replace_attributes(key=key, group_name=group)
        defs = dg.Definitions(assets=[checkpoint], resources={rk: self.resource})
        parts = [self._translated(defs, "checkpoint", self.checkpoint_asset.freshness())]
        if self.sync.enabled:
            sync_fresh = schedule_freshness(self.sync.cron_schedule)
            parts.append(self._translated(self.sync.build(rk), "sessions_table", sync_fresh))
        if is_on(self.evaluation):
            baselines = self.champion.baselines(key) if is_on(self.champion) else []
            with located_errors(context.path, "evaluation", self.evaluation):
                routes += section_route("evaluation", self.evaluation, routes)
                evaluation = self.evaluation.build(context.path, rk, group, key, baselines)
            parts.append(self._translated(evaluation, "evaluation"))
        if is_on(self.model_resources):
            parts.append(self.model_resources.build(rk, spans_db))
        if is_on(self.idle_guard):
            parts.append(self.idle_guard.build(rk, spans_db))
        if is_on(self.spend):
            spend_fresh = schedule_freshness(self.spend.cron_schedule)
            parts.append(self._translated(self.spend.build(rk, group), "spend", spend_fresh))
        if is_on(self.report):
            with located_errors(context.path, "report", self.report):
                routes += section_route("report", self.report, routes)
            spend_db = self.spend.db_path if self.spend is not None else None
            report = self.report.build(rk, group, eval_key, spend_db)
            reads = [dg.AssetKey.from_user_string(self.spend.key)] if is_on(self.spend) else []
            parts.append(self._translated(report, "report", deps=reads))
        if is_on(self.champion):
            champion = self.champion.build(context.path, eval_key, key, group)
            parts.append(self._translated(champion, "champion"))
        announced = key if self.checkpoint_asset.materialize_on_event else None
        parts.append(self.sessions.build(rk, announced, routes))
        return dg.Definitions.merge(*parts)
