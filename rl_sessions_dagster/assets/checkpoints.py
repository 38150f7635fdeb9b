"""The inference-checkpoint asset spec: one dynamic partition per checkpoint (partitions and keys
live in :mod:`rl_sessions_dagster.partitions`, shared with the sensors).

The sensors add a partition for each checkpoint they announce and record a runless
materialization of this external asset, so a user's evaluation asset can depend on it and be
driven either by the sensor's runs or by ``AutomationCondition.eager()``.
"""

import dagster as dg

from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS, checkpoint_id_for_partition
from ..partitions.checkpoints import (
    CHECKPOINT_PARTITIONS_NAME,
    checkpoint_metadata,
    checkpoint_partition_key,
)

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "CHECKPOINT_PARTITIONS_NAME",
    "checkpoint_id_for_partition",
    "checkpoint_metadata",
    "checkpoint_partition_key",
]


#: The external, partitioned spec of inference checkpoints, ready to be upstream; change its key,
#: group or owners with ``CHECKPOINT_ASSET_SPEC.replace_attributes(...)``.
CHECKPOINT_ASSET_SPEC = dg.AssetSpec(
    key=CHECKPOINT_ASSET_KEY,
    description=(
        "Inference checkpoints saved by Together AI RL training sessions, one partition "
        "per checkpoint. Materialized (runless) by the rl_sessions_dagster sensors."
    ),
    partitions_def=CHECKPOINT_PARTITIONS,
    group_name="together_rl",
    kinds={"together", "rl"},
)
