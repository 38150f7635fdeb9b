"""The pure event core: no HTTP, no Dagster. Previous state + what the API shows → events +
next state, for sessions (:func:`advance`) and model resources (:func:`advance_resources`);
the idle rule, spend and sweeps are pure functions beside them."""

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
