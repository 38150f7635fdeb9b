"""The model-resource tracker, with the session tracker's guarantees: one event per fact
(``resource_expiring`` once per deadline), a quiet first tick, a cap deferring the rest."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

from pydantic import BeforeValidator, Field, PlainSerializer

from ..api.clock import to_ms
from ..api.enums import ModelResourceStatus
from ..api.models import ModelResource
from .events import Outcome, ResourceEvent, ResourceEventKind
from .state import CursorState, Id, StateModel, letter_codes

_encode, _decode = letter_codes(
    "MODEL_RESOURCES_STATUS_", "PENDING CREATING READY STOPPING STOPPED ERROR", "PCRsSE"
)

_Status = Annotated[str, BeforeValidator(_decode), PlainSerializer(_encode)]

_STATUS_EVENTS = {
    ModelResourceStatus.READY: ResourceEventKind.RESOURCE_READY,
    ModelResourceStatus.ERROR: ResourceEventKind.RESOURCE_ERROR,
    ModelResourceStatus.STOPPED: ResourceEventKind.RESOURCE_STOPPED,
}


class TrackedResource(StateModel):
    """``first_seen_ms`` stands in for a missing created_at."""

    status: _Status = Field("", alias="s")
    #: the last expiry announced (0: none); the long-queue event is out.
    expiring_ms: int = Field(0, alias="e")
    queued: bool = Field(False, alias="q")
    first_seen_ms: int = Field(0, alias="f")
    #: READY was announced (or known at the first tick): a return to READY is no new event.
    ready: bool = Field(False, alias="y")


class ResourceTrackerState(CursorState):
    _what: ClassVar[str] = "model-resource cursor"
    _version: ClassVar[int] = 2
    _kind: ClassVar[str | None] = "model_resources"
    baseline_ms: int = Field(0, alias="b")
    #: newest ``created_at`` seen: the look-back window hangs below it.
    seen_max_ms: int = Field(0, alias="m")
    tracked: dict[Id, TrackedResource] = Field(default_factory=dict, alias="t")
    #: terminal resources created inside the window.
    recent_terminal: dict[Id, int] = Field(default_factory=dict, alias="r")
    failing_since_ms: int | None = Field(None, alias="f")


@dataclass(frozen=True)
class ResourceTrackerConfig:
    kinds: frozenset[ResourceEventKind] = frozenset(ResourceEventKind)
    max_events: int | None = None
    #: ``resource_expiring`` when READY and ``expires_at`` is at most this far ahead.
    expiring_lead_ms: int = 10 * 60 * 1000
    #: ``resource_queued_long`` when PENDING for longer than this.
    queued_long_ms: int = 30 * 60 * 1000
    lookback_ms: int = 10 * 60 * 1000


@dataclass
class ResourceObservation:
    """One tick's complete (filtered) list; the API's clock beats ``now_ms``."""

    now_ms: int
    resources: Sequence[ModelResource] = ()
    server_now_ms: int | None = None

    @property
    def clock_ms(self) -> int:
        return self.server_now_ms if self.server_now_ms is not None else self.now_ms


def is_terminal(resource: ModelResource) -> bool:
    """STOPPED and ERROR are never left (there is no restart)."""
    return resource.status in (ModelResourceStatus.STOPPED, ModelResourceStatus.ERROR)


def status_changes(
    state: ResourceTrackerState, resources: Sequence[ModelResource]
) -> list[ModelResource]:
    """Changed and new live resources: where a billed span can begin or end."""
    out = []
    for r in resources:
        known = state.tracked.get(r.id)
        new = known is None and not is_terminal(r) and r.id not in state.recent_terminal
        if new or (known is not None and known.status != r.raw_status):
            out.append(r)
    return out


def _due(
    entry: TrackedResource, r: ModelResource, now: int, config: ResourceTrackerConfig
) -> list[ResourceEvent]:
    """A status change that is no event is applied at once."""
    out: list[ResourceEvent] = []
    status = r.status
    if r.raw_status != entry.status:
        kind = _STATUS_EVENTS.get(status)
        if kind is None or (kind is ResourceEventKind.RESOURCE_READY and entry.ready):
            entry.status = r.raw_status
        else:
            out.append(ResourceEvent(kind, r, previous_status=entry.status or None))
    if status is ModelResourceStatus.READY:
        expires = to_ms(r.expires_at)
        if expires is not None and entry.expiring_ms < expires <= now + config.expiring_lead_ms:
            out.append(ResourceEvent(ResourceEventKind.RESOURCE_EXPIRING, r, expires_at_ms=expires))
    if status is ModelResourceStatus.PENDING and not entry.queued:
        queued = now - (to_ms(r.created_at) or entry.first_seen_ms or now)
        if queued > config.queued_long_ms:
            out.append(ResourceEvent(ResourceEventKind.RESOURCE_QUEUED_LONG, r, queued_ms=queued))
    return out


def _apply(entry: TrackedResource, event: ResourceEvent) -> None:
    if event.kind is ResourceEventKind.RESOURCE_EXPIRING:
        entry.expiring_ms = event.expires_at_ms or 0
    elif event.kind is ResourceEventKind.RESOURCE_QUEUED_LONG:
        entry.queued = True
    else:  # a status event
        entry.status = event.resource.raw_status
        entry.ready = entry.ready or event.kind is ResourceEventKind.RESOURCE_READY


def _remember(
    state: ResourceTrackerState, r: ModelResource, now: int, config: ResourceTrackerConfig
) -> None:  # tracked as already announced (first tick, history)
    entry = state.tracked[r.id] = TrackedResource(first_seen_ms=now)
    for event in _due(entry, r, now, config):
        _apply(entry, event)


def advance_resources(
    state: ResourceTrackerState, obs: ResourceObservation, config: ResourceTrackerConfig
) -> Outcome[ResourceEvent, ResourceTrackerState]:
    """``state`` is not modified."""
    state = state.model_copy(deep=True) if state.initialized else ResourceTrackerState()
    notes: list[str] = []
    now = obs.clock_ms
    by_id: dict[str, ModelResource] = {}
    for r in obs.resources:
        by_id.setdefault(r.id, r)
    created = {rid: to_ms(r.created_at) for rid, r in by_id.items()}
    known = [ms for ms in created.values() if ms is not None]

    if not state.initialized:
        state.initialized = True
        state.baseline_ms = state.seen_max_ms = max([*known, now])
        for rid, r in by_id.items():
            if not is_terminal(r):
                _remember(state, r, now, config)
            elif (ms := created[rid]) is not None and ms >= state.baseline_ms:
                state.recent_terminal[rid] = ms
        return Outcome([], state, notes)

    for rid in [rid for rid in state.tracked if rid not in by_id]:
        del state.tracked[rid]
        notes.append(f"model resource {rid} is no longer listed by the API; no longer tracked")

    floor = max(state.seen_max_ms - config.lookback_ms, state.baseline_ms)

    def entry_for(r: ModelResource) -> TrackedResource | None:
        """The entry to diff ``r`` against (a new one is registered); None: history or done."""
        if r.id in state.tracked:
            return state.tracked[r.id]
        ms = created[r.id]
        if r.id in state.recent_terminal or (ms is None and is_terminal(r)):
            return None  # without a creation time it cannot be told from history
        if ms is not None and ms < floor:  # history, or just let in by the filter
            if not is_terminal(r):
                _remember(state, r, now, config)
            return None
        return state.tracked.setdefault(r.id, TrackedResource(first_seen_ms=now))

    events: list[ResourceEvent] = []
    deferred = False
    ordered = sorted(by_id.values(), key=lambda r: (created[r.id] or 0, r.id))
    for i, r in enumerate(ordered):
        entry = entry_for(r)
        if entry is None:
            continue
        for event in _due(entry, r, now, config):
            if event.kind in config.kinds:
                if config.max_events is not None and len(events) >= config.max_events:
                    deferred = True
                    break
                events.append(event)
            _apply(entry, event)
        if deferred:  # track the rest, so the window cannot turn them into history
            for rest in ordered[i + 1 :]:
                entry_for(rest)
            break
        if is_terminal(r) and entry.status == r.raw_status:
            del state.tracked[r.id]
            ms = created[r.id]
            state.recent_terminal[r.id] = ms if ms is not None else state.seen_max_ms

    state.seen_max_ms = max([state.seen_max_ms, *known])
    floor = max(state.seen_max_ms - config.lookback_ms, state.baseline_ms)
    state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    return Outcome(events, state, notes, deferred=deferred)
