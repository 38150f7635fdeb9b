"""The ``champion:`` section: each sweep's best evaluated checkpoint, its sensor and baseline."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from ..assets import champion_baseline
from ..assets.evaluation import BaselineFinder
from ..core.sweeps import ChampionRule, Direction
from ..partitions import CHAMPION_ASSET_KEY
from ..sensors import ChampionOptions, build_champion_definitions
from .checks import LocatedSelection
from .schema import Section
from .sensors import copied_field, interval_field, running_field, sensor_knobs

#: The numeric entries the built-in evaluation records; ``score [<grader>]`` is one per grader.
RECORDED = (
    "score",
    "passed",
    "failed",
    "unreadable",
    "answers",
    "latency_p50_ms",
    "latency_p95_ms",
    "prompt_tokens",
    "completion_tokens",
    "estimated_cost_usd",
    "wall_seconds",
)


def recorded_metrics(section: str) -> dict[str, object]:
    """``<section>.metric`` reading the ``evaluation:`` asset: one it does not record is refused."""
    metric = {
        "if": {"pattern": r"^score \[.+\]$"},
        "then": True,
        "else": {"enum": [*RECORDED, "score [<grader name>]"]},
    }
    return {
        "if": {
            "required": ["evaluation", section],
            "properties": {
                section: {"type": "object", "not": {"required": ["evaluation_key"]}},
                "evaluation": {"type": "object"},
            },
        },
        "then": {"properties": {section: {"properties": {"metric": metric}}}},
    }


class ChampionRouteConfig(Section):
    """Where the ``champion_changed`` event goes (once per change)."""

    assets: str = Field(description="Asset selection, e.g. 'key:\"deploy_champion\"'.")
    job_name: str = Field(description="Name of the asset job the runs execute.")
    partitioned: bool = Field(
        default=False,
        description="The run carries the champion's checkpoint partition key (the assets "
        "must use CHECKPOINT_PARTITIONS).",
    )


class ChampionSection(Section):
    """The champion of each sweep (W&B group, else display-name prefix) by one metric."""

    enabled: bool = Field(default=True, description="false: no champion asset, no sensor.")
    key: str = Field(default=CHAMPION_ASSET_KEY.to_user_string(), description="Asset key.")
    evaluation_key: str | None = Field(
        default=None, description="Evaluation asset (default: the evaluation: section's key)."
    )
    metric: str = copied_field(ChampionRule, "metric")
    direction: Direction = copied_field(ChampionRule, "direction")
    min_candidates: int = copied_field(ChampionRule, "min_candidates")
    name_separator: str = copied_field(ChampionRule, "name_separator")
    baseline: bool = Field(
        default=True, description="Also check each evaluation's score against the champion."
    )
    on_change: ChampionRouteConfig | None = Field(
        default=None, description="Route champion_changed (e.g. to a deploy job)."
    )
    sensor_name: str = Field(
        default="together_rl_champion",
        min_length=1,
        description="Name of the champion sensor; with on_change, '<name>_on_change' runs the job.",
    )
    minimum_interval_seconds: int = interval_field()
    running: bool = running_field()

    def baselines(self, checkpoint_asset_key: dg.AssetKey) -> list[BaselineFinder]:
        """The champion as a score-check baseline: only when the metric is a higher score."""
        if not (self.baseline and self.metric == "score" and self.direction == "higher"):
            return []
        return [
            champion_baseline(
                dg.AssetKey.from_user_string(self.key),
                checkpoint_asset_key=checkpoint_asset_key,
                separator=self.name_separator,
            )
        ]

    def build(
        self,
        folder: Path | None,
        evaluation_key: str,
        checkpoint_asset_key: dg.AssetKey,
        group_name: str | None,
    ) -> dg.Definitions:
        route = self.on_change
        rule = ChampionRule(**self.model_dump(include=set(ChampionRule.__dataclass_fields__)))
        options = ChampionOptions(
            key=dg.AssetKey.from_user_string(self.key),
            evaluation_key=dg.AssetKey.from_user_string(self.evaluation_key or evaluation_key),
            checkpoint_asset_key=checkpoint_asset_key,
            job_name=route.job_name if route else ChampionOptions.job_name,
            partitioned_job=route.partitioned if route else False,
            group_name=group_name,
        )
        assets = None
        if route:  # checked when the job resolves: matching no asset fails `dg check defs`
            assets = LocatedSelection(
                dg.AssetSelection.from_string(route.assets),
                folder,
                ["champion", "on_change", "assets"],
                sensor=self.sensor_name,
                job=route.job_name,
                expected=None,
            )
        return build_champion_definitions(
            name=self.sensor_name, assets=assets, rule=rule, options=options, **sensor_knobs(self)
        )
