"""What the sensors and the assets both need: the checkpoint partitions and their keys, the
metadata on a checkpoint's page, and the sweep partitions of the champion.

A neutral package, so that ``sensors/`` and ``assets/`` never import each other.
"""

from .checkpoints import (
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    CHECKPOINT_PARTITIONS_NAME,
    SHORT_ID_LENGTH,
    CheckpointPartitionError,
    checkpoint_id_for_partition,
    checkpoint_metadata,
    checkpoint_partition_key,
    session_label,
)
from .sweeps import (
    CHAMPION_ASSET_KEY,
    EVALUATION_ASSET_KEY,
    SWEEP_PARTITIONS,
    SWEEP_PARTITIONS_NAME,
    checkpoint_sweeps,
    latest_metadata,
    metadata_value,
)

__all__ = [
    "CHAMPION_ASSET_KEY",
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_PARTITIONS",
    "CHECKPOINT_PARTITIONS_NAME",
    "EVALUATION_ASSET_KEY",
    "SHORT_ID_LENGTH",
    "SWEEP_PARTITIONS",
    "SWEEP_PARTITIONS_NAME",
    "CheckpointPartitionError",
    "checkpoint_id_for_partition",
    "checkpoint_metadata",
    "checkpoint_partition_key",
    "checkpoint_sweeps",
    "latest_metadata",
    "metadata_value",
    "session_label",
]
