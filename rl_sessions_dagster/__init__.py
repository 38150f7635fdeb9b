"""Orchestrate Together AI RL (post-training) sessions from Dagster.

Layers, each importing only from the ones before it in this list:
``api`` (HTTP client, no Dagster) → ``core`` (pure event tracker) → ``resource`` and
``partitions`` (Dagster glue both others share) → ``assets``, ``sensors`` (thin Dagster glue;
never import each other) → ``components`` (the YAML ``TogetherRLComponent``). ``testing``
holds the local simulator of the service.

The names below are loaded on first use, so ``import rl_sessions_dagster.api`` or the
simulator's command line do not pay for importing Dagster.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .version import __version__

_EXPORTS = {
    "RLSessionsClient": ".api",
    "TogetherRLError": ".api",
    "CHECKPOINT_ASSET_KEY": ".partitions",
    "CHECKPOINT_ASSET_SPEC": ".assets",
    "CHECKPOINT_PARTITIONS": ".partitions",
    "build_checkpoint_asset_spec": ".assets",
    "checkpoint_id_for_partition": ".partitions",
    "EventKind": ".core",
    "SessionEvent": ".core",
    "TogetherRLResource": ".resource",
    "EventRoute": ".sensors",
    "PollingOptions": ".sensors",
    "SessionFilter": ".sensors",
    "TogetherRLComponent": ".components",
    "build_routed_sensor": ".sensors",
    "build_checkpoint_sensor": ".sensors",
    "build_rl_event_sensor": ".sensors",
    "build_session_status_sensor": ".sensors",
    "ResourceSpec": ".api",
    "ResourceEventKind": ".core",
    "ResourceEvent": ".core",
    "build_spend_asset": ".assets",
    "build_evaluation_asset": ".assets",
    "build_session_report_asset": ".assets",
    "champion_baseline": ".assets",
    "ChampionRule": ".sensors",
    "build_champion_definitions": ".sensors",
    "EvaluationSpec": ".evaluation",
    "ResourceFilter": ".sensors",
    "ResourceRoute": ".sensors",
    "build_model_resource_sensor": ".sensors",
    "build_idle_guard": ".sensors",
    "LaunchedSession": ".launch",
    "TrainingLaunchConfig": ".launch",
    "build_training_op": ".launch",
    "launched_session": ".launch",
}

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_ASSET_SPEC",
    "CHECKPOINT_PARTITIONS",
    "ChampionRule",
    "EvaluationSpec",
    "EventKind",
    "EventRoute",
    "LaunchedSession",
    "PollingOptions",
    "RLSessionsClient",
    "ResourceEvent",
    "ResourceEventKind",
    "ResourceFilter",
    "ResourceRoute",
    "ResourceSpec",
    "SessionEvent",
    "SessionFilter",
    "TogetherRLComponent",
    "TogetherRLError",
    "TogetherRLResource",
    "TrainingLaunchConfig",
    "__version__",
    "build_champion_definitions",
    "build_checkpoint_asset_spec",
    "build_checkpoint_sensor",
    "build_evaluation_asset",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_rl_event_sensor",
    "build_routed_sensor",
    "build_session_report_asset",
    "build_session_status_sensor",
    "build_spend_asset",
    "build_training_op",
    "champion_baseline",
    "checkpoint_id_for_partition",
    "launched_session",
]

if TYPE_CHECKING:
    from .api import ResourceSpec, RLSessionsClient, TogetherRLError
    from .assets import (
        CHECKPOINT_ASSET_SPEC,
        build_checkpoint_asset_spec,
        build_evaluation_asset,
        build_session_report_asset,
        build_spend_asset,
        champion_baseline,
    )
    from .components import TogetherRLComponent
    from .core import EventKind, ResourceEvent, ResourceEventKind, SessionEvent
    from .evaluation import EvaluationSpec
    from .launch import LaunchedSession, TrainingLaunchConfig, build_training_op, launched_session
    from .partitions import (
        CHECKPOINT_ASSET_KEY,
        CHECKPOINT_PARTITIONS,
        checkpoint_id_for_partition,
    )
    from .resource import TogetherRLResource
    from .sensors import (
        ChampionRule,
        EventRoute,
        PollingOptions,
        ResourceFilter,
        ResourceRoute,
        SessionFilter,
        build_champion_definitions,
        build_checkpoint_sensor,
        build_idle_guard,
        build_model_resource_sensor,
        build_rl_event_sensor,
        build_routed_sensor,
        build_session_status_sensor,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rl_sessions_dagster' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
