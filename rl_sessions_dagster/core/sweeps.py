"""Sweeps (one definition, for spend and the champion) and their champion: the best evaluated
checkpoint by one metric; ties go to the earliest step, then the smallest id."""

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass as checked_dataclass

Direction = Literal["higher", "lower"]


def sweep_name(wandb_group: str | None, display_name: str | None, separator: str = "-") -> str:
    """The W&B group, else the display name up to the last ``separator``, else ``"(none)"``."""
    if wandb_group:
        return wandb_group
    if display_name:
        head, sep, _ = display_name.rpartition(separator)
        return head if sep and head else display_name
    return "(none)"


@checked_dataclass(frozen=True, kw_only=True)
class ChampionRule:
    """How a sweep's champion is chosen; its fields are also the YAML's ``champion:`` fields."""

    metric: str = Field(
        default="score", min_length=1, description="Evaluation metadata entry compared."
    )
    direction: Direction = Field(
        default="higher", description="Whether a higher or a lower metric is better."
    )
    min_candidates: int = Field(
        default=1,
        ge=1,
        le=10_000,
        description="Evaluated checkpoints a sweep needs before a champion.",
    )
    name_separator: str = Field(
        default="-",
        min_length=1,
        description="Sweep without W&B group: display name up to the last one.",
    )


@dataclass(frozen=True)
class Candidate:
    """A sweep's evaluated checkpoint (its latest evaluation)."""

    partition: str
    checkpoint_id: str
    value: float
    step: int | None = None
    model_name: str | None = None
    session_id: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> "Candidate | None":
        value, step = raw.get("value"), raw.get("step")
        if not isinstance(value, int | float) or not raw.get("partition"):
            return None
        return cls(
            partition=str(raw["partition"]),
            checkpoint_id=str(raw.get("checkpoint_id") or raw["partition"]),
            value=float(value),
            step=step if isinstance(step, int) else None,
            model_name=str(raw["model_name"]) if raw.get("model_name") else None,
            session_id=str(raw["session_id"]) if raw.get("session_id") else None,
        )


def rank(candidates: Iterable[Candidate], direction: Direction = "higher") -> list[Candidate]:
    """Best first; NaN last."""
    sign = -1.0 if direction == "higher" else 1.0

    def key(c: Candidate) -> tuple[bool, float, float, str]:
        bad = math.isnan(c.value)
        step = float(c.step) if c.step is not None else math.inf
        return (bad, 0.0 if bad else sign * c.value, step, c.checkpoint_id)

    return sorted(candidates, key=key)


@dataclass(frozen=True)
class Standing:
    """``champion`` is None until ``min_candidates`` are evaluated."""

    champion: Candidate | None
    runner_up: Candidate | None
    candidates: int

    @property
    def margin(self) -> float | None:
        """The champion's lead over the runner-up (positive, in the metric's units)."""
        if self.champion is None or self.runner_up is None:
            return None
        return abs(self.champion.value - self.runner_up.value)


def standing(
    candidates: Iterable[Candidate], direction: Direction = "higher", min_candidates: int = 1
) -> Standing:
    ranked = [c for c in rank(candidates, direction) if not math.isnan(c.value)]
    if len(ranked) < max(1, min_candidates):
        return Standing(None, None, len(ranked))
    return Standing(ranked[0], ranked[1] if len(ranked) > 1 else None, len(ranked))


def fold(previous: Iterable[Candidate], latest: dict[str, Candidate | None]) -> list[Candidate]:
    """``latest``: each checkpoint partition's newest evaluation (None: no value, drops out)."""
    merged = {c.partition: c for c in previous} | latest
    return sorted((c for c in merged.values() if c is not None), key=lambda c: c.partition)
