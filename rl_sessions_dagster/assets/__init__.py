"""Assets: the checkpoint partitions and spec, the built-in checkpoint evaluation, the sweep
champions, the finished-session report, and the scheduled session/checkpoint sync."""

from .champion import champion_baseline
from .checkpoints import CHECKPOINT_ASSET_SPEC
from .evaluation import build_evaluation_asset
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
