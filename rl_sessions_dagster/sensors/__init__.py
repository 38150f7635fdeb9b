"""Dagster sensors that turn Together RL session events into runs."""

from .factory import (
    TRANSIENT_ERRORS,
    build_checkpoint_sensor,
    build_rl_event_sensor,
    build_session_status_sensor,
)
from .idle_guard import IdleStopConfig, build_idle_guard
from .resources import (
    ResourceFilter,
    ResourceRunRequestFn,
    build_model_resource_sensor,
    resource_event_tags,
)
from .run_requests import RunRequestFn, event_tags
from .source import SessionFilter

__all__ = [
    "TRANSIENT_ERRORS",
    "IdleStopConfig",
    "ResourceFilter",
    "ResourceRunRequestFn",
    "RunRequestFn",
    "SessionFilter",
    "build_checkpoint_sensor",
    "build_idle_guard",
    "build_model_resource_sensor",
    "build_rl_event_sensor",
    "build_session_status_sensor",
    "event_tags",
    "resource_event_tags",
]
