"""Which sessions a sensor or a sync watches (Dagster-free: sensors and assets share it)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models load with the first tick, not with the definitions
    from ..api.models import TrainingSession


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a sensor watches. Every field is optional; all given ones must match.

    ``model_resources_id`` and ``created_by`` ("me" or a user id) are sent to the API;
    ``display_name`` (a glob, e.g. ``"gsm8k-*"``), ``wandb_project`` and ``predicate`` are
    checked on each session read.
    """

    model_resources_id: str | None = None
    created_by: str | None = None
    display_name: str | None = None
    wandb_project: str | None = None
    predicate: Callable[[TrainingSession], bool] | None = None

    def matches(self, session: TrainingSession) -> bool:
        if self.display_name is not None and not fnmatch.fnmatchcase(
            session.display_name or "", self.display_name
        ):
            return False
        if self.wandb_project is not None:
            wandb = session.metadata.wandb
            if wandb is None or wandb.project != self.wandb_project:
                return False
        return self.predicate is None or bool(self.predicate(session))
