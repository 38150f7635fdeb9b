"""The pure event core: no HTTP, no Dagster. Previous state + API snapshot → events + state."""

from .events import CHECKPOINT_EVENTS, TERMINAL_EVENTS, EventKind, SessionEvent
from .passes import ScannedPage
from .state import CursorError, ListOrder, TrackerState
from .tracker import (
    ALL_EVENT_KINDS,
    Observation,
    ScanPlan,
    TickOutcome,
    TrackerConfig,
    advance,
    checkpoint_key,
    floor_ms,
    plan_scan,
    sessions_to_fetch,
    to_ms,
)

__all__ = [
    "ALL_EVENT_KINDS",
    "CHECKPOINT_EVENTS",
    "TERMINAL_EVENTS",
    "CursorError",
    "EventKind",
    "ListOrder",
    "Observation",
    "ScanPlan",
    "ScannedPage",
    "SessionEvent",
    "TickOutcome",
    "TrackerConfig",
    "TrackerState",
    "advance",
    "checkpoint_key",
    "floor_ms",
    "plan_scan",
    "sessions_to_fetch",
    "to_ms",
]
