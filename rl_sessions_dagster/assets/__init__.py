"""Assets: the checkpoint partitions and spec, the built-in checkpoint evaluation, the sweep
champions, the finished-session report, and the scheduled session/checkpoint sync."""

from .champion import champion_baseline
from .checkpoints import CHECKPOINT_ASSET_SPEC
from .evaluation import (
    SCORE_CHECK_NAME,
    Baseline,
    BaselineFinder,
    EvaluatedCheckpoint,
    build_evaluation_asset,
    evaluation_metadata,
    previous_checkpoint_baseline,
)
from .report import REPORT_ASSET_KEY, ReportConfig, build_session_report_asset, session_spend
from .spend import (
    DEFAULT_SPEND_DB_FILENAME,
    SPEND_ASSET_KEY,
    SpendConfig,
    SpendReport,
    build_spend_asset,
    run_spend,
)
from .sync import (
    DEFAULT_DB_FILENAME,
    SESSION_SYNC_ASSET_KEY,
    StoreFactory,
    SyncConfig,
    SyncStats,
    build_session_sync_asset,
    run_sync,
)

__all__ = [
    "CHECKPOINT_ASSET_SPEC",
    "DEFAULT_DB_FILENAME",
    "DEFAULT_SPEND_DB_FILENAME",
    "REPORT_ASSET_KEY",
    "SCORE_CHECK_NAME",
    "SESSION_SYNC_ASSET_KEY",
    "SPEND_ASSET_KEY",
    "Baseline",
    "BaselineFinder",
    "EvaluatedCheckpoint",
    "ReportConfig",
    "SpendConfig",
    "SpendReport",
    "StoreFactory",
    "SyncConfig",
    "SyncStats",
    "build_evaluation_asset",
    "build_session_report_asset",
    "build_session_sync_asset",
    "build_spend_asset",
    "champion_baseline",
    "evaluation_metadata",
    "previous_checkpoint_baseline",
    "run_spend",
    "run_sync",
    "session_spend",
]
