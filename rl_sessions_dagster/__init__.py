"""Orchestrate Together AI RL (post-training) sessions from Dagster.

Layers, each importing only from the ones before it in this list:
``api`` (HTTP client, no Dagster) → ``core`` (pure event tracker) → ``resource`` and
``partitions`` (Dagster glue both others share) → ``assets``, ``sensors`` (thin Dagster glue;
never import each other) → ``components`` (the YAML ``TogetherRLComponent``). ``testing``
holds the local simulator of the service.

The names below are loaded on first use, so ``import rl_sessions_dagster.api`` or the
simulator's command line do not pay for importing Dagster.
"""

from typing import TYPE_CHECKING

from .namespace import lazy_exports
from .version import __version__ as __version__

# The public names, written once: type checkers read these imports, and at run time the same
# lines (read back by ``namespace.lazy_exports``) say where each name is loaded from on first use.
if TYPE_CHECKING:
    from .api import ResourceSpec as ResourceSpec
    from .api import RLSessionsClient as RLSessionsClient
    from .api import TogetherRLError as TogetherRLError
    from .assets import CHECKPOINT_ASSET_SPEC as CHECKPOINT_ASSET_SPEC
    from .assets import build_checkpoint_asset_spec as build_checkpoint_asset_spec
    from .assets import build_evaluation_asset as build_evaluation_asset
    from .assets import build_session_report_asset as build_session_report_asset
    from .assets import build_spend_asset as build_spend_asset
    from .assets import champion_baseline as champion_baseline
    from .components import TogetherRLComponent as TogetherRLComponent
    from .core import EventKind as EventKind
    from .core import IdlePolicy as IdlePolicy
    from .core import ResourceEvent as ResourceEvent
    from .core import ResourceEventKind as ResourceEventKind
    from .core import SessionEvent as SessionEvent
    from .core.filters import SessionFilter as SessionFilter
    from .core.sweeps import ChampionRule as ChampionRule
    from .evaluation import EvaluationSpec as EvaluationSpec
    from .partitions import CHECKPOINT_ASSET_KEY as CHECKPOINT_ASSET_KEY
    from .partitions import CHECKPOINT_PARTITIONS as CHECKPOINT_PARTITIONS
    from .partitions import checkpoint_id_for_partition as checkpoint_id_for_partition
    from .resource import TogetherRLResource as TogetherRLResource
    from .sensors import ChampionOptions as ChampionOptions
    from .sensors import EventRoute as EventRoute
    from .sensors import IdleGuardOptions as IdleGuardOptions
    from .sensors import PollingOptions as PollingOptions
    from .sensors import ResourceFilter as ResourceFilter
    from .sensors import ResourceRoute as ResourceRoute
    from .sensors import ResourceSensorOptions as ResourceSensorOptions
    from .sensors import build_champion_definitions as build_champion_definitions
    from .sensors import build_checkpoint_sensor as build_checkpoint_sensor
    from .sensors import build_idle_guard as build_idle_guard
    from .sensors import build_model_resource_sensor as build_model_resource_sensor
    from .sensors import build_rl_event_sensor as build_rl_event_sensor
    from .sensors import build_routed_sensor as build_routed_sensor
    from .sensors import build_session_status_sensor as build_session_status_sensor
    from .training import LaunchedSession as LaunchedSession
    from .training import TrainingLaunchConfig as TrainingLaunchConfig
    from .training import build_training_op as build_training_op
    from .training import launched_session as launched_session


__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, extra=["__version__"])
