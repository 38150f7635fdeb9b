"""The pure event core, no HTTP, no Dagster: state + what the API shows → events + next state
(:func:`advance`, :func:`advance_resources`); idle, spend and sweeps are pure rules beside them."""

from .events import EventKind, SessionEvent
from .resources import ResourceTrackerState, advance_resources
from .state import TrackerState
from .tracker import advance

__all__ = [
    "EventKind",
    "ResourceTrackerState",
    "SessionEvent",
    "TrackerState",
    "advance",
    "advance_resources",
]
