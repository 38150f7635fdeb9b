"""``SQLiteSessionStore``: the 0.2 name of the table store on a SQLite file.

0.2 had a second implementation here on ``sqlite3``; the one SQLAlchemy store
(:class:`~rl_sessions_dagster.storage.SQLAlchemyTableStore`) now writes every table on every
backend, SQLite included, so this is only the old name, signature and ``connection`` kept for
user code.
"""

import sqlite3
from pathlib import Path
from typing import Any

from .sql import SQLAlchemyTableStore

__all__ = ["SQLiteSessionStore"]


class SQLiteSessionStore(SQLAlchemyTableStore):
    """The table store on one SQLite file (``":memory:"`` for tests); WAL, created on open."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        super().__init__(str(path), setting="the SQLite path", timeout=timeout)
        self.path = str(path)
        self._raw: Any = None

    @property
    def connection(self) -> sqlite3.Connection:
        """A ``sqlite3`` connection to the file (autocommit), for ad-hoc queries; do not write
        behind the store's back."""
        if self._raw is None:
            self._raw = self.engine.raw_connection()
        conn: sqlite3.Connection = self._raw.driver_connection
        return conn

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None
        super().close()
