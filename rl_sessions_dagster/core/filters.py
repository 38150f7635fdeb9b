"""Which sessions a sensor or a sync watches (Dagster-free: sensors and assets share it)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass

from ..api.models import TrainingSession


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a sensor watches. Every field is optional; all given ones must match.

    ``model_resources_id`` and ``created_by`` ("me" or a user id) are also sent to the API, so
    lists cost less; every field is checked again on every session read, listed or fetched by
    id, because an excluded session must never cost an evaluation. ``display_name`` is a glob
    (e.g. ``"gsm8k-*"``); ``wandb_project`` and ``wandb_group`` match exactly.
    """

    model_resources_id: str | None = None
    created_by: str | None = None
    display_name: str | None = None
    wandb_project: str | None = None
    wandb_group: str | None = None
    predicate: Callable[[TrainingSession], bool] | None = None

    @property
    def needs_user_id(self) -> bool:
        """``created_by: me`` can only be checked on a session once "me"'s id is known."""
        return self.created_by == "me"

    def matches(
        self, session: TrainingSession, *, user_id: str | None = None, listed: bool = False
    ) -> bool:
        """Whether ``session`` is watched. ``user_id`` is who "me" is, when known.

        ``listed``: the session came from a list the API filtered by model resource and
        creator, so a value the API left out (or "me" not yet resolved) is taken on the
        server's word; a session fetched by id must show the value itself.
        """
        if self.model_resources_id is not None and not _same(
            session.model_resources_id, self.model_resources_id, listed
        ):
            return False
        if self.created_by is not None:
            wanted = user_id if self.needs_user_id else self.created_by
            if not _same(session.created_by, wanted, listed):
                return False
        if self.display_name is not None and not fnmatch.fnmatchcase(
            session.display_name or "", self.display_name
        ):
            return False
        if self.wandb_project is not None or self.wandb_group is not None:
            wandb = session.metadata.wandb
            if wandb is None:
                return False
            if self.wandb_project is not None and wandb.project != self.wandb_project:
                return False
            if self.wandb_group is not None and wandb.group != self.wandb_group:
                return False
        return self.predicate is None or bool(self.predicate(session))


def _same(actual: str | None, wanted: str | None, listed: bool) -> bool:
    if actual is None or wanted is None:
        return listed
    return actual == wanted
