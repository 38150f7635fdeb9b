"""Dagster sensors that turn Together RL events into runs, one builder per family: session
events, model-resource events, the idle guard and the sweep champion."""

from .champion import build_champion_definitions
from .idle_guard import build_idle_guard
from .options import (
    ChampionOptions,
    EventRoute,
    IdleGuardOptions,
    PollingOptions,
    ResourceRoute,
    ResourceSensorOptions,
)
from .resource_sensor import ResourceFilter, build_model_resource_sensor
from .session_sensor import build_session_sensor

__all__ = [
    "ChampionOptions",
    "EventRoute",
    "IdleGuardOptions",
    "PollingOptions",
    "ResourceFilter",
    "ResourceRoute",
    "ResourceSensorOptions",
    "build_champion_definitions",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_session_sensor",
]
