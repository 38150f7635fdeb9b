"""Assets: the checkpoint spec, the checkpoint evaluation, the session report, and the table
assets (the session sync, the spend)."""

from .checkpoints import CHECKPOINT_ASSET_SPEC
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
