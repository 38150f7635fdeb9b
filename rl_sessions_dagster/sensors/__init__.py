"""Dagster sensors that turn Together RL events into runs: session events, model-resource
events, the idle guard and the sweep champion.

Every builder has one shape: the sensor's identity (``name``, ``minimum_interval_seconds``,
``default_status``, ``description``), where its runs go (``routes``, or one ``job``/``target``),
what it watches (a filter, policy or rule) and one typed options object.
"""

from .champion import (
    CHAMPION_CHANGED,
    build_champion_asset_spec,
    build_champion_definitions,
    build_champion_sensor,
)
from .idle_guard import IdleStopConfig, build_idle_guard
from .options import (
    ChampionOptions,
    EventRoute,
    IdleGuardOptions,
    PollingOptions,
    ResourceRoute,
    ResourceRunRequestFn,
    ResourceSensorOptions,
    UnknownEventKind,
)
from .presets import build_checkpoint_sensor, build_session_status_sensor
from .resource_sensor import ResourceFilter, build_model_resource_sensor, resource_event_tags
from .run_requests import RunRequestFn, event_tags
from .session_sensor import build_rl_event_sensor, build_routed_sensor
from .tick import TRANSIENT_ERRORS

__all__ = [
    "CHAMPION_CHANGED",
    "TRANSIENT_ERRORS",
    "ChampionOptions",
    "EventRoute",
    "IdleGuardOptions",
    "IdleStopConfig",
    "PollingOptions",
    "ResourceFilter",
    "ResourceRoute",
    "ResourceRunRequestFn",
    "ResourceSensorOptions",
    "RunRequestFn",
    "UnknownEventKind",
    "build_champion_asset_spec",
    "build_champion_definitions",
    "build_champion_sensor",
    "build_checkpoint_sensor",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_rl_event_sensor",
    "build_routed_sensor",
    "build_session_status_sensor",
    "event_tags",
    "resource_event_tags",
]
