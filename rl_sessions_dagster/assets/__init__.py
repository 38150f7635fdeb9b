"""Assets: the checkpoint partitions and spec, and the scheduled session/checkpoint sync."""

from .checkpoints import (
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    CHECKPOINT_PARTITIONS_NAME,
    build_checkpoint_asset_spec,
    checkpoint_metadata,
    checkpoint_partition_key,
)

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "CHECKPOINT_PARTITIONS_NAME",
    "build_checkpoint_asset_spec",
    "checkpoint_metadata",
    "checkpoint_partition_key",
]
