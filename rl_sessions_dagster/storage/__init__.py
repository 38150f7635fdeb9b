"""Where the library keeps its tables: sessions and checkpoints (the sync), spend (the spend
asset and GPU sensors), and every table added later.

One store writes them all: :class:`SQLAlchemyTableStore` on a database URL (the instance's
PostgreSQL, the team's database) or a SQLite file path. The row types and the
:class:`SessionStore` / :class:`SpendStore` protocols say what the assets need, so a team can
pass its own store (BigQuery, ...) as a store factory. No Dagster here: the mapping from API
objects to rows and the upsert logic are testable alone.
"""

from .rows import SessionRow, SessionStore, SpendStore
from .sql import SQLAlchemyTableStore

__all__ = [
    "SQLAlchemyTableStore",
    "SessionRow",
    "SessionStore",
    "SpendStore",
]
