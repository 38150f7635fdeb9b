"""Where the library keeps its tables: sessions and checkpoints (the sync), spend (the spend
asset and GPU sensors), and every table added later.

One store writes them all: :class:`SQLAlchemyTableStore` on a database URL (the instance's
PostgreSQL, the team's database) or a SQLite file path. The row types and the
:class:`SessionStore` / :class:`SpendStore` protocols say what the assets need, so a team can
pass its own store (BigQuery, ...) as a store factory. No Dagster here: the mapping from API
objects to rows and the upsert logic are testable alone.
"""

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
from .sql import SQLAlchemyTableStore
from .urls import (
    TableStoreConfigError,
    TableStoreError,
    backend_of,
    check_target,
    is_database_url,
    redact_url,
)

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
