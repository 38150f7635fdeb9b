"""The library's tables (sessions, checkpoints, spend) in one :class:`SQLAlchemyTableStore`.
No Dagster here. The row types and the store protocols say what the assets need, so a team can
pass its own store."""

from .rows import SessionRow, SessionStore, SpendStore
from .sql import SQLAlchemyTableStore

__all__ = ["SQLAlchemyTableStore", "SessionRow", "SessionStore", "SpendStore"]
