"""Where the library keeps its tables: sessions and checkpoints (the sync), spend (the spend
asset and GPU sensors), and every table added later.

One store writes them all: :class:`SQLAlchemyTableStore` on a database URL (the instance's
PostgreSQL, the team's database) or a SQLite file path. The row types and the
:class:`SessionStore` / :class:`SpendStore` protocols say what the assets need, so a team can
pass its own store (BigQuery, ...) as a store factory. No Dagster here: the mapping from API
objects to rows and the upsert logic are testable alone.

SQLAlchemy is imported only when a store is built (:class:`SQLAlchemyTableStore` loads on
first use), so importing the builders stays cheap.
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

if TYPE_CHECKING:
    from .sql import SQLAlchemyTableStore

__all__ = [
    "SCHEMA_VERSION",
    "CheckpointRow",
    "MarksMissing",
    "ResourceSpendRow",
    "SQLAlchemyTableStore",
    "SessionRow",
    "SessionSpendRow",
    "SessionStore",
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
    "redact_url",
    "session_row",
]


def __getattr__(name: str) -> Any:
    if name != "SQLAlchemyTableStore":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = import_module(".sql", __name__).SQLAlchemyTableStore
    globals()[name] = value
    return value
