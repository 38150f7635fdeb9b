"""``EvaluationSpec``: one checkpoint evaluation as configuration, for Python and (the same
model) the YAML ``evaluation:`` section, so the two cannot drift; its fields are the runner's
only defaults. :meth:`EvaluationSpec.load` checks everything when the definitions load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .dataset import Dataset, DatasetError, item_error, load_dataset
from .graders import Grader, GraderSpec, resolve_grader

__all__ = ["EvaluationSpec", "LoadedEvaluation"]


@dataclass(frozen=True)
class LoadedEvaluation:
    """A spec made real: validated items and built graders."""

    dataset: Dataset
    graders: tuple[Grader, ...]
    spec: EvaluationSpec


class EvaluationSpec(BaseModel):
    """A dataset, graders and how to run them against each checkpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    dataset: str | None = Field(
        default=None,
        description="JSONL file of items, one JSON object per line (relative paths: from the "
        "defs.yaml folder in YAML, from base_dir in Python). Give this or items.",
    )
    items: list[dict[str, Any]] | None = Field(
        default=None,
        description="Items inline: {messages: [...]} or {prompt: ...} or template fields, "
        "each with expected (and optionally id). Give this or dataset.",
    )
    prompt_template: str | None = Field(
        default=None,
        description="Prompt for items without messages/prompt, filled from their fields, e.g. "
        "'What is {a} + {b}? Answer with the number only.'",
    )
    system_prompt: str | None = Field(
        default=None, description="System message put before items that have none."
    )
    graders: list[str | GraderSpec] = Field(
        default_factory=lambda: list[str | GraderSpec](["exact"]),
        min_length=1,
        description="exact, contains, regex, numeric, json_field, or 'package.module:function'"
        "; or a mapping with type and options (e.g. {type: numeric, abs_tol: 0.01}).",
    )
    samples: int = Field(default=1, ge=1, le=100, description="Answers asked per item.")
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(default=256, ge=1, le=32768, description="Most tokens per answer.")
    concurrency: int = Field(
        default=8, ge=1, le=64, description="Chat calls in flight at once (one thread each)."
    )
    max_calls: int | None = Field(
        default=10_000,
        ge=1,
        description="Most chat calls one evaluation may make (items x samples must fit; "
        "checked when the definitions load). Retries of a call do not count. null: no cap.",
    )
    timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds per call, retries and waits included."
    )
    price_prompt_per_million: float = Field(
        default=0.0, ge=0, description="USD per million prompt tokens (estimated cost)."
    )
    price_completion_per_million: float = Field(
        default=0.0, ge=0, description="USD per million completion tokens (estimated cost)."
    )
    tolerance: float = Field(
        default=0.05, ge=0, le=1, description="Largest score drop below a baseline that passes."
    )
    table_rows: int = Field(
        default=50, ge=0, le=1000, description="Items shown in the results table (failures first)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> EvaluationSpec:
        if (self.dataset is None) == (self.items is None):
            raise ValueError("give exactly one of dataset (a JSONL file) or items (inline)")
        return self

    def check_cap(self, dataset: Dataset) -> None:
        """Raise ValueError when the dataset needs more calls than ``max_calls``."""
        needed = len(dataset) * self.samples
        if self.max_calls is not None and needed > self.max_calls:
            raise ValueError(
                f"{len(dataset)} items x {self.samples} samples = {needed} calls, more than "
                f"max_calls={self.max_calls}"
            )

    def load(self, base_dir: str | Path | None = None) -> LoadedEvaluation:
        """Read the dataset, build the graders, check every item against every grader: a
        :class:`DatasetError` names the line (or too many calls), a ValueError a bad grader."""
        dataset = load_dataset(
            self.dataset, self.items, prompt_template=self.prompt_template,
            system_prompt=self.system_prompt, base_dir=base_dir,
        )  # fmt: skip
        graders = tuple(resolve_grader(g) for g in self.graders)
        names = [g.name for g in graders]
        if len(set(names)) != len(names):
            raise ValueError(f"grader names must be unique (give name:), got {names}")
        inline = self.items is not None
        for item in dataset.items:
            for grader in graders:
                if (problem := grader.check(item)) is not None:
                    raise item_error(problem, dataset.source, item.line or 0, inline)
        try:
            self.check_cap(dataset)
        except ValueError as exc:
            raise DatasetError(str(exc), source=dataset.source) from None
        return LoadedEvaluation(dataset, graders, self)
