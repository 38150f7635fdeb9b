"""Where the library keeps its tables: sessions and checkpoints (the sync), spend (the spend
asset and GPU sensors), and every table added later.

One store writes them all: :class:`SQLAlchemyTableStore` on a database URL (the instance's
PostgreSQL, the team's database) or a SQLite file path. The row types and the
:class:`SessionStore` / :class:`SpendStore` protocols say what the assets need, so a team can
pass its own store (BigQuery, ...) as a store factory. No Dagster here: the mapping from API
objects to rows and the upsert logic are testable alone.

SQLAlchemy is imported only when a store is built (the names below load on first use), so
importing the builders stays cheap. ``SQLAlchemySessionStore``, ``SQLiteSessionStore`` and
``SessionStoreError`` are the 0.2 names, kept as aliases.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .rows import (
    SCHEMA_VERSION,
    CheckpointRow,
    MarksMissing,
    ResourceSpendRow,
    SessionRow,
    SessionSpendRow,
    SessionStore,
    SpendStore,
    StoreCounts,
    UpsertResult,
    checkpoint_rows,
    iso_utc,
    session_row,
)
from .urls import (
    TableStoreConfigError,
    TableStoreError,
    backend_of,
    check_target,
    is_database_url,
    redact_url,
)

#: The 0.2 name of :class:`TableStoreError`.
SessionStoreError = TableStoreError

_LAZY = {
    "SQLAlchemyTableStore": ".sql",
    "SQLAlchemySessionStore": ".sql",
    "SQLiteSessionStore": ".sqlite",
}

if TYPE_CHECKING:
    from .sql import SQLAlchemyTableStore
    from .sql import SQLAlchemyTableStore as SQLAlchemySessionStore
    from .sqlite import SQLiteSessionStore

__all__ = [
    "SCHEMA_VERSION",
    "CheckpointRow",
    "MarksMissing",
    "ResourceSpendRow",
    "SQLAlchemySessionStore",
    "SQLAlchemyTableStore",
    "SQLiteSessionStore",
    "SessionRow",
    "SessionSpendRow",
    "SessionStore",
    "SessionStoreError",
    "SpendStore",
    "StoreCounts",
    "TableStoreConfigError",
    "TableStoreError",
    "UpsertResult",
    "backend_of",
    "check_target",
    "checkpoint_rows",
    "is_database_url",
    "iso_utc",
    "open_session_store",
    "redact_url",
    "session_row",
]

if TYPE_CHECKING:
    from .sql import SQLAlchemyTableStore
    from .sql import SQLAlchemyTableStore as SQLAlchemySessionStore
    from .sqlite import SQLiteSessionStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(
        import_module(module, __name__), "SQLAlchemyTableStore" if module == ".sql" else name
    )
    globals()[name] = value
    return value


def open_session_store(target: str) -> "SQLAlchemyTableStore":
    """The table store for a database URL or a SQLite file path (``":memory:"`` too); a URL no
    store can use is refused (:class:`TableStoreConfigError`), never taken for a path."""
    from .sql import SQLAlchemyTableStore

    return SQLAlchemyTableStore(target)
