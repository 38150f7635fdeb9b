"""Orchestrate Together AI RL (post-training) sessions from Dagster.

Layers, each importing only from the ones before it in this list:
``api`` (HTTP client, no Dagster) → ``core`` (pure event tracker) → ``resource`` and
``partitions`` (Dagster glue both others share) → ``assets``, ``sensors`` (thin Dagster glue;
never import each other) → ``components`` (the YAML ``TogetherRLComponent``). ``testing``
holds the local simulator of the service.
"""

from .api import ResourceSpec, RLSessionsClient, TogetherRLError
from .assets import (
    CHECKPOINT_ASSET_SPEC,
    build_evaluation_asset,
    build_session_report_asset,
    build_spend_asset,
    champion_baseline,
)
from .components import TogetherRLComponent
from .core import EventKind, SessionEvent
from .core.events import ResourceEvent, ResourceEventKind, SessionFilter
from .core.idle import IdlePolicy
from .core.sweeps import ChampionRule
from .evaluation import EvaluationSpec
from .partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS, checkpoint_id_for_partition
from .resource import TogetherRLResource
from .sensors import (
    ChampionOptions,
    EventRoute,
    IdleGuardOptions,
    PollingOptions,
    ResourceFilter,
    ResourceRoute,
    ResourceSensorOptions,
    build_champion_definitions,
    build_idle_guard,
    build_model_resource_sensor,
    build_session_sensor,
)
from .training import LaunchedSession, TrainingLaunchConfig, launched_session
from .version import __version__

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "ChampionOptions",
    "ChampionRule",
    "EvaluationSpec",
    "EventKind",
    "EventRoute",
    "IdleGuardOptions",
    "IdlePolicy",
    "LaunchedSession",
    "PollingOptions",
    "RLSessionsClient",
    "ResourceEvent",
    "ResourceEventKind",
    "ResourceFilter",
    "ResourceRoute",
    "ResourceSensorOptions",
    "ResourceSpec",
    "SessionEvent",
    "SessionFilter",
    "TogetherRLComponent",
    "TogetherRLError",
    "TogetherRLResource",
    "TrainingLaunchConfig",
    "__version__",
    "build_champion_definitions",
    "build_evaluation_asset",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_session_report_asset",
    "build_session_sensor",
    "build_spend_asset",
    "champion_baseline",
    "checkpoint_id_for_partition",
    "launched_session",
]
