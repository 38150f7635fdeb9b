"""The 0.2 home of the spend store, kept as names only.

The spend tables (``rl_resource_spend``, ``rl_session_spend``) are written by the one table
store, :class:`~rl_sessions_dagster.storage.SQLAlchemyTableStore`, in the same database as the
sync tables; the rows live in :mod:`rl_sessions_dagster.storage`. No Dagster here.
"""

from pathlib import Path

from .storage.rows import ResourceSpendRow, SessionSpendRow, SpendStore
from .storage.sqlite import SQLiteSessionStore

__all__ = ["ResourceSpendRow", "SQLiteSpendStore", "SessionSpendRow", "SpendStore"]


class SQLiteSpendStore(SQLiteSessionStore):
    """The table store on a SQLite file (the 0.2 spend store's name and signature)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        super().__init__(path, timeout=timeout)
