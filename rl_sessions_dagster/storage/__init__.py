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

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .rows import SCHEMA_VERSION as SCHEMA_VERSION
    from .rows import CheckpointRow as CheckpointRow
    from .rows import MarksMissing as MarksMissing
    from .rows import ResourceSpendRow as ResourceSpendRow
    from .rows import SessionRow as SessionRow
    from .rows import SessionSpendRow as SessionSpendRow
    from .rows import SessionStore as SessionStore
    from .rows import SpendStore as SpendStore
    from .rows import StoreCounts as StoreCounts
    from .rows import UpsertResult as UpsertResult
    from .rows import checkpoint_rows as checkpoint_rows
    from .rows import iso_utc as iso_utc
    from .rows import session_row as session_row
    from .sql import SQLAlchemyTableStore as SQLAlchemyTableStore
    from .urls import TableStoreConfigError as TableStoreConfigError
    from .urls import TableStoreError as TableStoreError
    from .urls import backend_of as backend_of
    from .urls import check_target as check_target
    from .urls import is_database_url as is_database_url
    from .urls import redact_url as redact_url

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
