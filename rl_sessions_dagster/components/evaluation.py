"""The ``evaluation:`` section: an :class:`~rl_sessions_dagster.EvaluationSpec` and its asset;
the dataset is read at load (relative to ``defs.yaml``), so ``dg check defs`` names a bad line."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import dagster as dg
from pydantic import Field

from ..assets import build_evaluation_asset
from ..assets.evaluation import SCORE_CHECK_NAME, BaselineFinder, previous_checkpoint_baseline
from ..core import EventKind
from ..evaluation import EvaluationSpec
from ..evaluation.graders import GraderSpec, GraderType
from ..partitions import EVALUATION_ASSET_KEY
from .schema import Section


class GraderConfig(GraderSpec, Section):
    """One grader in YAML, ``{type: numeric, abs_tol: 0.01}``, or a ``pkg.mod:fn`` of your own."""

    type: str = Field(  # type: ignore[assignment]
        description="exact, contains, regex, numeric, json_field, or 'package.module:function'."
    )

    #: ``dg check yaml`` names the allowed types; a ``pkg.mod:fn`` is imported at load.
    schema_overrides: ClassVar[dict[str, dict[str, Any]]] = {
        "type": {
            "if": {"pattern": ":"},
            "then": {"pattern": r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"},
            "else": {
                "enum": [t for t in get_args(GraderType) if t != "function"]
                + ["package.module:function"]
            },
        }
    }


class EvaluationSection(EvaluationSpec, Section):
    """A built-in evaluation of every registered checkpoint, with its score check."""

    graders: list[GraderConfig] = Field(  # type: ignore[assignment]
        default_factory=lambda: [GraderConfig(type="exact")],
        min_length=1,
        description="Graders, each {type: ..., options}: exact, contains, regex, numeric "
        "(abs_tol, rel_tol, pick), json_field (path), or type: 'package.module:function'.",
    )
    enabled: bool = Field(default=True, description="false: no evaluation asset, no route.")
    key: str = Field(
        default=EVALUATION_ASSET_KEY.to_user_string(), description="Asset key of the evaluation."
    )
    job_name: str = Field(
        default="evaluate_checkpoint", description="Name of the job the checkpoint runs execute."
    )
    route: bool = Field(
        default=True,
        description="Route checkpoint_registered here (false: route it under sessions.routes:).",
    )
    progress_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds between progress lines (answers, errors, items/s) in the run log.",
    )
    check_name: str = Field(default=SCORE_CHECK_NAME, description="Name of the score check.")
    check_severity: Literal["WARN", "ERROR"] = Field(
        default="WARN", description="Severity of a failed score check."
    )
    #: What ``route: true`` sends here.
    event_kinds: ClassVar[list[EventKind]] = [EventKind.CHECKPOINT_REGISTERED]

    def to_spec(self) -> EvaluationSpec:
        """The plain spec; a grader of ``type: pkg.mod:fn`` becomes a function grader."""
        graders = [g.model_dump(exclude_none=True) for g in self.graders]
        for g in graders:
            if ":" in g["type"]:
                g["function"], g["type"] = g["type"], "function"
        fields = self.model_dump(include=set(EvaluationSpec.model_fields))
        return EvaluationSpec.model_validate({**fields, "graders": graders})

    def build(
        self,
        base_dir: Path | None,
        resource_key: str,
        group_name: str | None,
        checkpoint_asset_key: dg.AssetKey,
        baselines: Sequence[BaselineFinder],
    ) -> dg.Definitions:
        asset = build_evaluation_asset(
            self.to_spec(),
            key=dg.AssetKey.from_user_string(self.key),
            resource_key=resource_key,
            checkpoint_asset_key=checkpoint_asset_key,
            base_dir=base_dir,
            group_name=group_name,
            check_name=self.check_name,
            check_severity=dg.AssetCheckSeverity(self.check_severity),
            baselines=(previous_checkpoint_baseline, *baselines),
            progress_seconds=self.progress_seconds,
        )
        return dg.Definitions(assets=[asset])
