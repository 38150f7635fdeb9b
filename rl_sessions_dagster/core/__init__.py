"""The pure event core: no HTTP, no Dagster. Previous state + API snapshot → events + state."""

from .errors import CursorError
from .events import CHECKPOINT_EVENTS, TERMINAL_EVENTS, EventKind, SessionEvent
from .idle import Decision, IdlePolicy, IdleVerdict, ResourceUse, decide, idle_since, resource_use
from .list_order import ListOrder
from .list_pass import ScannedPage
from .resource_events import ALL_RESOURCE_EVENT_KINDS, ResourceEvent, ResourceEventKind
from .resource_tracker import (
    ResourceObservation,
    ResourceTickOutcome,
    ResourceTrackerConfig,
    ResourceTrackerState,
    advance_resources,
)
from .scan import floor_ms, plan_scan
from .spend import (
    Attachment,
    ResourceSpan,
    Spend,
    attachment,
    compute_spend,
    observe_span,
    sweep_of_auto,
    sweep_totals,
)
from .state import TrackerState
from .tracker import advance, sessions_to_fetch
from .tracker_io import (
    ALL_EVENT_KINDS,
    Observation,
    ScanPlan,
    TickOutcome,
    TrackerConfig,
    checkpoint_key,
)

__all__ = [
    "ALL_EVENT_KINDS",
    "ALL_RESOURCE_EVENT_KINDS",
    "CHECKPOINT_EVENTS",
    "TERMINAL_EVENTS",
    "Attachment",
    "CursorError",
    "Decision",
    "EventKind",
    "IdlePolicy",
    "IdleVerdict",
    "ListOrder",
    "Observation",
    "ResourceEvent",
    "ResourceEventKind",
    "ResourceObservation",
    "ResourceSpan",
    "ResourceTickOutcome",
    "ResourceTrackerConfig",
    "ResourceTrackerState",
    "ResourceUse",
    "ScanPlan",
    "ScannedPage",
    "SessionEvent",
    "Spend",
    "TickOutcome",
    "TrackerConfig",
    "TrackerState",
    "advance",
    "advance_resources",
    "attachment",
    "checkpoint_key",
    "compute_spend",
    "decide",
    "floor_ms",
    "idle_since",
    "observe_span",
    "plan_scan",
    "resource_use",
    "sessions_to_fetch",
    "sweep_of_auto",
    "sweep_totals",
]
