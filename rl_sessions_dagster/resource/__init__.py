"""How Dagster reaches the service and the library's tables: :class:`TogetherRLResource`
(configuration; it builds the API client), the retry log that puts the client's retries in the
run's or tick's Dagster log, and :func:`open_table_store`, the one way a run or a tick opens
the tables.

Dagster glue that ``sensors/`` and ``assets/`` share (neither imports the other).
"""

from .retry_log import RetryLog
from .tables import open_table_store
from .together_rl import TABLES_URL_ENV, TogetherRLResource

__all__ = [
    "TABLES_URL_ENV",
    "RetryLog",
    "TogetherRLResource",
    "open_table_store",
]
