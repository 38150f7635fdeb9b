"""Where the scheduled sync keeps its copy of the RL sessions and checkpoints.

The sync asset (``assets/sync.py``) writes two flat tables that analysts can query with plain
SQL: ``rl_sessions`` (one row per training session) and ``rl_checkpoints`` (one row per
inference or training checkpoint). The :class:`SessionStore` protocol is all the asset needs:

* :class:`SQLiteSessionStore` (``sqlite.py``): the default, one file next to the instance;
* :class:`SQLAlchemySessionStore` (``sql.py``): any SQLAlchemy URL, e.g. the team's PostgreSQL;
* a team's own store (BigQuery, ...), passed to the asset as a store factory.

:func:`open_session_store` picks the first or the second from a path or URL. No Dagster here:
the mapping from API objects to rows and the upsert logic are testable alone.
"""

from typing import TYPE_CHECKING, Any

from .rows import (
    SCHEMA_VERSION,
    CheckpointRow,
    MarksMissing,
    SessionRow,
    SessionStore,
    StoreCounts,
    UpsertResult,
    checkpoint_rows,
    iso_utc,
    session_row,
)
from .sqlite import SQLiteSessionStore

if TYPE_CHECKING:
    from .sql import SessionStoreError, SQLAlchemySessionStore, redact_url

__all__ = [
    "SCHEMA_VERSION",
    "CheckpointRow",
    "MarksMissing",
    "SQLAlchemySessionStore",
    "SQLiteSessionStore",
    "SessionRow",
    "SessionStore",
    "SessionStoreError",
    "StoreCounts",
    "UpsertResult",
    "checkpoint_rows",
    "is_database_url",
    "iso_utc",
    "open_session_store",
    "redact_url",
    "session_row",
]


def is_database_url(target: str) -> bool:
    """True for a SQLAlchemy URL (``postgresql+psycopg2://...``), False for a file path."""
    scheme, sep, _ = target.partition("://")
    return bool(sep) and bool(scheme) and "/" not in scheme


def open_session_store(target: str) -> SessionStore:
    """The default store factory: a SQLAlchemy URL opens :class:`SQLAlchemySessionStore`,
    anything else is a SQLite file path (or ``":memory:"``)."""
    if is_database_url(target):
        from .sql import SQLAlchemySessionStore

        return SQLAlchemySessionStore(target)
    return SQLiteSessionStore(target)


def __getattr__(name: str) -> Any:
    """The SQLAlchemy names load on first use: importing SQLAlchemy costs more than the rest
    of this package over ``import dagster``, and most deployments use the SQLite store."""
    if name in ("SessionStoreError", "SQLAlchemySessionStore", "redact_url"):
        from . import sql

        return getattr(sql, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
