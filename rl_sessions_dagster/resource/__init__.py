"""How Dagster reaches the service and the library's tables: :class:`TogetherRLResource`
(configuration; it builds the API client), the retry log that puts the client's retries in the
run's or tick's Dagster log, and :func:`open_table_store`, the one way a run or a tick opens
the tables.

Dagster glue that ``sensors/`` and ``assets/`` share (neither imports the other).
"""

from .tables import open_table_store
from .together_rl import TogetherRLResource

__all__ = [
    "TogetherRLResource",
    "open_table_store",
]
