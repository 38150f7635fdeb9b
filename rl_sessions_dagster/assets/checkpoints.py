"""The inference-checkpoint asset spec: one dynamic partition per checkpoint (partitions and keys
live in :mod:`rl_sessions_dagster.partitions`, shared with the sensors).

The sensors add a partition for each checkpoint they announce and record a runless
materialization of this external asset, so a user's evaluation asset can depend on it and be
driven either by the sensor's runs or by ``AutomationCondition.eager()``.
"""

from collections.abc import Sequence

import dagster as dg

from ..partitions import (
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    CHECKPOINT_PARTITIONS_NAME,
    checkpoint_id_for_partition,
    checkpoint_metadata,
    checkpoint_partition_key,
)

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "CHECKPOINT_PARTITIONS_NAME",
    "build_checkpoint_asset_spec",
    "checkpoint_id_for_partition",
    "checkpoint_metadata",
    "checkpoint_partition_key",
]


def build_checkpoint_asset_spec(
    key: dg.AssetKey | str | Sequence[str] = CHECKPOINT_ASSET_KEY,
    *,
    partitions_def: dg.DynamicPartitionsDefinition = CHECKPOINT_PARTITIONS,
    group_name: str | None = "together_rl",
    owners: Sequence[str] | None = None,
    description: str | None = None,
) -> dg.AssetSpec:
    """An external, partitioned ``AssetSpec`` for inference checkpoints, ready to be upstream."""
    return dg.AssetSpec(
        key=dg.AssetKey.from_coercible(key),
        description=description
        or (
            "Inference checkpoints saved by Together AI RL training sessions, one partition "
            "per checkpoint. Materialized (runless) by the rl_sessions_dagster sensors."
        ),
        partitions_def=partitions_def,
        group_name=group_name,
        owners=list(owners) if owners else None,
        kinds={"together", "rl"},
    )


CHECKPOINT_ASSET_SPEC = build_checkpoint_asset_spec()
