"""Dagster glue ``sensors/`` and ``assets/`` share: :class:`TogetherRLResource`, the retry log
and :func:`open_table_store`, the one way a run or a tick opens the tables."""

from .tables import open_table_store
from .together_rl import TogetherRLResource

__all__ = [
    "TogetherRLResource",
    "open_table_store",
]
