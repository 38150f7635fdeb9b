"""Orchestrate Together AI RL (post-training) sessions from Dagster.

Layers, each importing only from the ones above it in this list:
``api`` (HTTP client, no Dagster) → ``core`` (pure event tracker) → ``resource``, ``assets``,
``sensors`` (thin Dagster glue). ``testing`` holds the local simulator of the service.
"""

from .api import RLSessionsClient, TogetherRLError
from .assets import (
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    build_checkpoint_asset_spec,
)
from .core import EventKind, SessionEvent
from .resource import TogetherRLResource
from .sensors import (
    SessionFilter,
    build_checkpoint_sensor,
    build_rl_event_sensor,
    build_session_status_sensor,
)
from .version import __version__

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "EventKind",
    "RLSessionsClient",
    "SessionEvent",
    "SessionFilter",
    "TogetherRLError",
    "TogetherRLResource",
    "__version__",
    "build_checkpoint_asset_spec",
    "build_checkpoint_sensor",
    "build_rl_event_sensor",
    "build_session_status_sensor",
]
