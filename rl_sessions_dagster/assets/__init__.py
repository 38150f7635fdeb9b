"""Assets: the checkpoint partitions and spec, the built-in checkpoint evaluation, the sweep
champions, the finished-session report, and the scheduled session/checkpoint sync."""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .champion import champion_baseline as champion_baseline
    from .checkpoints import CHECKPOINT_ASSET_SPEC as CHECKPOINT_ASSET_SPEC
    from .checkpoints import build_checkpoint_asset_spec as build_checkpoint_asset_spec
    from .evaluation import SCORE_CHECK_NAME as SCORE_CHECK_NAME
    from .evaluation import Baseline as Baseline
    from .evaluation import BaselineFinder as BaselineFinder
    from .evaluation import EvaluatedCheckpoint as EvaluatedCheckpoint
    from .evaluation import build_evaluation_asset as build_evaluation_asset
    from .evaluation import evaluation_metadata as evaluation_metadata
    from .evaluation import previous_checkpoint_baseline as previous_checkpoint_baseline
    from .report import REPORT_ASSET_KEY as REPORT_ASSET_KEY
    from .report import ReportConfig as ReportConfig
    from .report import build_session_report_asset as build_session_report_asset
    from .report import session_spend as session_spend
    from .spend import DEFAULT_SPEND_DB_FILENAME as DEFAULT_SPEND_DB_FILENAME
    from .spend import SPEND_ASSET_KEY as SPEND_ASSET_KEY
    from .spend import SpendConfig as SpendConfig
    from .spend import build_spend_asset as build_spend_asset
    from .spend_report import SpendReport as SpendReport
    from .spend_report import run_spend as run_spend
    from .sync import DEFAULT_DB_FILENAME as DEFAULT_DB_FILENAME
    from .sync import SESSION_SYNC_ASSET_KEY as SESSION_SYNC_ASSET_KEY
    from .sync import StoreFactory as StoreFactory
    from .sync import SyncConfig as SyncConfig
    from .sync import SyncStats as SyncStats
    from .sync import build_session_sync_asset as build_session_sync_asset
    from .sync import build_sync_definitions as build_sync_definitions
    from .sync import build_sync_job_and_schedule as build_sync_job_and_schedule
    from .sync import build_sync_schedule as build_sync_schedule
    from .sync import run_sync as run_sync

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
