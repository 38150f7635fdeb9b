"""Assets: the checkpoint spec, its evaluation, the session report, the tables (sync, spend)."""

import dagster as dg

from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS
from .evaluation import build_evaluation_asset, champion_baseline
from .report import build_session_report_asset
from .spend import build_spend_asset
from .sync import build_session_sync_asset

__all__ = [
    "CHECKPOINT_ASSET_SPEC",
    "build_evaluation_asset",
    "build_session_report_asset",
    "build_session_sync_asset",
    "build_spend_asset",
    "champion_baseline",
]

#: External, one dynamic partition per checkpoint: the sensors add each partition and record a
#: runless materialization. Change it with ``CHECKPOINT_ASSET_SPEC.replace_attributes(...)``.
CHECKPOINT_ASSET_SPEC = dg.AssetSpec(
    key=CHECKPOINT_ASSET_KEY,
    description="Inference checkpoints saved by Together AI RL training sessions, one partition "
    "per checkpoint. Materialized (runless) by the rl_sessions_dagster sensors.",
    partitions_def=CHECKPOINT_PARTITIONS,
    group_name="together_rl",
    kinds={"together", "rl"},
)
