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
from .registration import (
    CheckpointNotDownloadableError,
    CheckpointNotRegisteredError,
    DeploymentKind,
    DeploymentTarget,
    choose_variant,
    deployment_target,
    download_urls,
)
from .sync import (
    DEFAULT_DB_FILENAME,
    SESSION_SYNC_ASSET_KEY,
    StoreFactory,
    SyncConfig,
    SyncStats,
    build_session_sync_asset,
    build_sync_definitions,
    build_sync_job_and_schedule,
    build_sync_schedule,
    run_sync,
)

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "CHECKPOINT_PARTITIONS_NAME",
    "DEFAULT_DB_FILENAME",
    "SESSION_SYNC_ASSET_KEY",
    "CheckpointNotDownloadableError",
    "CheckpointNotRegisteredError",
    "DeploymentKind",
    "DeploymentTarget",
    "StoreFactory",
    "SyncConfig",
    "SyncStats",
    "build_checkpoint_asset_spec",
    "build_session_sync_asset",
    "build_sync_definitions",
    "build_sync_job_and_schedule",
    "build_sync_schedule",
    "checkpoint_metadata",
    "checkpoint_partition_key",
    "choose_variant",
    "deployment_target",
    "download_urls",
    "run_sync",
]
