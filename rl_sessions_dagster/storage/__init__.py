"""The library's tables (sessions, checkpoints, spend) in one :class:`SQLAlchemyTableStore`, no
Dagster; the row types and store protocols say what the assets need, so a team can pass its own."""

from .rows import SessionRow, SessionStore, SpendStore
from .sql import SQLAlchemyTableStore

__all__ = ["SQLAlchemyTableStore", "SessionRow", "SessionStore", "SpendStore"]
