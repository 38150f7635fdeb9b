"""The pure event core: no HTTP, no Dagster. Previous state + what the API shows → events +
next state, for sessions (:func:`advance`) and model resources (:func:`advance_resources`);
the idle rule, spend and sweeps are pure functions beside them."""

from .cursor import CursorError
from .events import (
    CHECKPOINT_EVENTS,
    TERMINAL_EVENTS,
    EventKind,
    ResourceEvent,
    ResourceEventKind,
    SessionEvent,
)
from .filters import SessionFilter
from .idle import IdlePolicy
from .observation import Observation, TickOutcome, TrackerConfig
from .resources import ResourceTrackerState, advance_resources
from .state import TrackerState
from .sweeps import ChampionRule
from .tracker import advance

__all__ = [
    "CHECKPOINT_EVENTS",
    "TERMINAL_EVENTS",
    "ChampionRule",
    "CursorError",
    "EventKind",
    "IdlePolicy",
    "Observation",
    "ResourceEvent",
    "ResourceEventKind",
    "ResourceTrackerState",
    "SessionEvent",
    "SessionFilter",
    "TickOutcome",
    "TrackerConfig",
    "TrackerState",
    "advance",
    "advance_resources",
]
