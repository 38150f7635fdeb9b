"""Dagster sensors that turn Together RL events into runs, one builder per family: session
events (:func:`build_session_sensor`), model-resource events
(:func:`build_model_resource_sensor`), the idle guard (:func:`build_idle_guard`) and the sweep
champion (:func:`build_champion_definitions`).

Every builder has one shape: the sensor's identity (``name``, ``minimum_interval_seconds``,
``default_status``, ``description``), where its runs go (``routes``, or the champion's one
``job``/``assets``), what it watches (a filter, policy or rule) and one typed options object.
"""

from .champion import CHAMPION_CHANGED, build_champion_definitions
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
from .resource_sensor import ResourceFilter, build_model_resource_sensor, resource_event_tags
from .run_requests import RunRequestFn, event_tags
from .session_sensor import build_session_sensor
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
    "build_champion_definitions",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_session_sensor",
    "event_tags",
    "resource_event_tags",
]
