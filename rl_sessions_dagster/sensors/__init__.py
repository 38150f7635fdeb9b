"""Dagster sensors that turn Together RL session events into runs."""

from .factory import TRANSIENT_ERRORS, build_rl_event_sensor, build_routed_sensor
from .options import EventRoute, PollingOptions
from .presets import build_checkpoint_sensor, build_session_status_sensor
from .run_requests import RunRequestFn, event_tags
from .source import SessionFilter

__all__ = [
    "TRANSIENT_ERRORS",
    "EventRoute",
    "PollingOptions",
    "RunRequestFn",
    "SessionFilter",
    "build_checkpoint_sensor",
    "build_rl_event_sensor",
    "build_routed_sensor",
    "build_session_status_sensor",
    "event_tags",
]
