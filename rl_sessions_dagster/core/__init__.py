"""The pure event core: no HTTP, no Dagster. Previous state + API snapshot → events + state."""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .errors import CursorError as CursorError
    from .events import CHECKPOINT_EVENTS as CHECKPOINT_EVENTS
    from .events import TERMINAL_EVENTS as TERMINAL_EVENTS
    from .events import EventKind as EventKind
    from .events import SessionEvent as SessionEvent
    from .idle import Decision as Decision
    from .idle import IdlePolicy as IdlePolicy
    from .idle import IdleVerdict as IdleVerdict
    from .idle import ResourceUse as ResourceUse
    from .idle import decide as decide
    from .idle import idle_since as idle_since
    from .idle import resource_use as resource_use
    from .list_order import ListOrder as ListOrder
    from .list_pass import ScannedPage as ScannedPage
    from .resource_events import ALL_RESOURCE_EVENT_KINDS as ALL_RESOURCE_EVENT_KINDS
    from .resource_events import ResourceEvent as ResourceEvent
    from .resource_events import ResourceEventKind as ResourceEventKind
    from .resource_tracker import ResourceObservation as ResourceObservation
    from .resource_tracker import ResourceTickOutcome as ResourceTickOutcome
    from .resource_tracker import ResourceTrackerConfig as ResourceTrackerConfig
    from .resource_tracker import ResourceTrackerState as ResourceTrackerState
    from .resource_tracker import advance_resources as advance_resources
    from .scan import floor_ms as floor_ms
    from .scan import plan_scan as plan_scan
    from .spend import Attachment as Attachment
    from .spend import ResourceSpan as ResourceSpan
    from .spend import Spend as Spend
    from .spend import attachment as attachment
    from .spend import compute_spend as compute_spend
    from .spend import observe_span as observe_span
    from .spend import sweep_of_auto as sweep_of_auto
    from .spend import sweep_totals as sweep_totals
    from .state import TrackerState as TrackerState
    from .tracker import advance as advance
    from .tracker import sessions_to_fetch as sessions_to_fetch
    from .tracker_io import ALL_EVENT_KINDS as ALL_EVENT_KINDS
    from .tracker_io import Observation as Observation
    from .tracker_io import ScanPlan as ScanPlan
    from .tracker_io import TickOutcome as TickOutcome
    from .tracker_io import TrackerConfig as TrackerConfig
    from .tracker_io import checkpoint_key as checkpoint_key

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
