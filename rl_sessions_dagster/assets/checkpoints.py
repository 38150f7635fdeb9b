"""The inference-checkpoint asset: external, one dynamic partition per checkpoint. The sensors
add each checkpoint's partition and record a runless materialization, so an evaluation asset
downstream runs from the sensors' run requests or from ``AutomationCondition.eager()``."""

import dagster as dg

from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS

#: Change its key, group or owners with ``CHECKPOINT_ASSET_SPEC.replace_attributes(...)``.
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
