"""How Dagster reaches the service and the library's tables: :class:`TogetherRLResource`
(configuration; it builds the API client), the retry log that puts the client's retries in the
run's or tick's Dagster log, and :func:`open_table_store`, the one way a run or a tick opens
the tables.

Dagster glue that ``sensors/`` and ``assets/`` share (neither imports the other).
"""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .retry_log import RetryLog as RetryLog
    from .tables import open_table_store as open_table_store
    from .together_rl import TABLES_URL_ENV as TABLES_URL_ENV
    from .together_rl import TogetherRLResource as TogetherRLResource

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
