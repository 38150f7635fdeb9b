"""Dagster sensors that turn Together RL events into runs, one builder per family: session
events (:func:`build_session_sensor`), model-resource events
(:func:`build_model_resource_sensor`), the idle guard (:func:`build_idle_guard`) and the sweep
champion (:func:`build_champion_definitions`).

Every builder has one shape: the sensor's identity (``name``, ``minimum_interval_seconds``,
``default_status``, ``description``), where its runs go (``routes``, or the champion's one
``job``/``assets``), what it watches (a filter, policy or rule) and one typed options object.
"""

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
