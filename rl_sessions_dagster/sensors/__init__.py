"""Dagster sensors that turn Together RL events into runs: session events, model-resource
events, the idle guard and the sweep champion.

Every builder has one shape: the sensor's identity (``name``, ``minimum_interval_seconds``,
``default_status``, ``description``), where its runs go (``routes``, or one ``job``/``target``),
what it watches (a filter, policy or rule) and one typed options object.
"""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .champion import CHAMPION_CHANGED as CHAMPION_CHANGED
    from .champion import build_champion_asset_spec as build_champion_asset_spec
    from .champion import build_champion_definitions as build_champion_definitions
    from .champion import build_champion_sensor as build_champion_sensor
    from .idle_guard import IdleStopConfig as IdleStopConfig
    from .idle_guard import build_idle_guard as build_idle_guard
    from .options import ChampionOptions as ChampionOptions
    from .options import EventRoute as EventRoute
    from .options import IdleGuardOptions as IdleGuardOptions
    from .options import PollingOptions as PollingOptions
    from .options import ResourceRoute as ResourceRoute
    from .options import ResourceRunRequestFn as ResourceRunRequestFn
    from .options import ResourceSensorOptions as ResourceSensorOptions
    from .options import UnknownEventKind as UnknownEventKind
    from .presets import build_checkpoint_sensor as build_checkpoint_sensor
    from .presets import build_session_status_sensor as build_session_status_sensor
    from .resource_sensor import ResourceFilter as ResourceFilter
    from .resource_sensor import build_model_resource_sensor as build_model_resource_sensor
    from .resource_sensor import resource_event_tags as resource_event_tags
    from .run_requests import RunRequestFn as RunRequestFn
    from .run_requests import event_tags as event_tags
    from .session_sensor import build_rl_event_sensor as build_rl_event_sensor
    from .session_sensor import build_routed_sensor as build_routed_sensor
    from .tick import TRANSIENT_ERRORS as TRANSIENT_ERRORS

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
