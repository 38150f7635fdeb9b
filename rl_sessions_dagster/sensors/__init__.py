"""Dagster sensors that turn Together RL session events into runs (and evaluations into
sweep champions)."""

from ..core.filters import SessionFilter
from ..core.sweeps import ChampionRule
from .champion import (
    CHAMPION_CHANGED,
    build_champion_asset_spec,
    build_champion_definitions,
    build_champion_sensor,
)
from .session_sensor import build_rl_event_sensor, build_routed_sensor
from .idle_guard import IdleStopConfig, build_idle_guard
from .options import EventRoute, PollingOptions, ResourceSensorOptions, UnknownEventKind
from .presets import build_checkpoint_sensor, build_session_status_sensor
from .resource_sensor import (
    ResourceFilter,
    ResourceRoute,
    ResourceRunRequestFn,
    build_model_resource_sensor,
    resource_event_tags,
)
from .run_requests import RunRequestFn, event_tags
from .tick import TRANSIENT_ERRORS

__all__ = [
    "CHAMPION_CHANGED",
    "TRANSIENT_ERRORS",
    "ChampionRule",
    "EventRoute",
    "IdleStopConfig",
    "PollingOptions",
    "ResourceFilter",
    "ResourceRoute",
    "ResourceRunRequestFn",
    "ResourceSensorOptions",
    "RunRequestFn",
    "SessionFilter",
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
