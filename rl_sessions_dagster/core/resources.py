"""The pure tracker behind the resource sensor: model-resource list + cursor → events + cursor.

Model resources are few per account (tens), so every tick reads the whole list and this module
diffs it against a small cursor. The guarantees mirror the session tracker's:

* **Exactly once.** Each event's ``key`` is unique per fact and stable across ticks, restarts
  and cursor resets (it is the Dagster ``run_key``): ``resource_ready:<id>``,
  ``resource_error:<id>``, ``resource_stopped:<id>``, ``resource_queued_long:<id>`` and
  ``resource_expiring:<id>:<expires_at ms>`` (one per expiry deadline: activity moves
  ``expires_at`` later, and a later deadline that comes close again is a new fact).
* **First tick quiet.** What exists when the sensor first runs is remembered, not announced.
* **Bounded cursor.** Only non-terminal resources are tracked; a terminal one is forgotten
  right after its event, remembered by id only while its ``created_at`` is inside the
  look-back window (older terminal resources in the list are known history).
* **Tick budget.** With a cap on events, processing stops at the first event over it; the
  cursor records only what was applied, and the rest follows on the next tick.
* **Drift-tolerant.** An unknown status or error code is kept raw and never raises; unknown
  statuses produce no event (only the documented facts do) but are tracked.

STOPPING produces no event: billing has already ended, and STOPPED follows.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ..api.clock import to_ms
from ..api.enums import ModelResourceStatus
from ..api.models import ModelResource
from .events import ResourceEvent, ResourceEventKind
from .state import CursorState, Id, LetterCodes, StateModel, fork

#: the state model with short aliases and compact ids.
RESOURCE_CURSOR_VERSION = 2


_KIND = "model_resources"


#: a raw resource status, written as one letter when known.
_LETTERS = LetterCodes(
    {
        ModelResourceStatus.PENDING.value: "P",
        ModelResourceStatus.CREATING.value: "C",
        ModelResourceStatus.READY.value: "R",
        ModelResourceStatus.STOPPING.value: "s",
        ModelResourceStatus.STOPPED.value: "S",
        ModelResourceStatus.ERROR.value: "E",
    }
)


_Status = Annotated[str, BeforeValidator(_LETTERS.decode), PlainSerializer(_LETTERS.encode)]


#: statuses a resource never leaves (there is no restart endpoint).
TERMINAL_RESOURCE_STATUSES = frozenset({ModelResourceStatus.STOPPED, ModelResourceStatus.ERROR})


_STATUS_EVENTS = {
    ModelResourceStatus.READY: ResourceEventKind.RESOURCE_READY,
    ModelResourceStatus.ERROR: ResourceEventKind.RESOURCE_ERROR,
    ModelResourceStatus.STOPPED: ResourceEventKind.RESOURCE_STOPPED,
}


class TrackedResource(StateModel):
    """What the tracker remembers of a resource that is still moving.

    ``status`` is the last raw status applied; ``expiring_ms`` the last deadline announced
    (0 = none); ``queued`` whether the long-queue event was emitted; ``first_seen_ms`` stands
    in for a missing ``created_at``.
    """

    status: _Status = Field("", alias="s")
    expiring_ms: int = Field(0, alias="e")
    queued: bool = Field(False, alias="q")
    first_seen_ms: int = Field(0, alias="f")
    #: READY was announced (or known at the first tick): a status that leaves READY and comes
    #: back (an unknown one, say) does not announce it again.
    ready: bool = Field(False, alias="y")


class ResourceTrackerState(CursorState):
    """Everything carried from one tick to the next; its JSON is the cursor."""

    _what: ClassVar[str] = "model-resource cursor"
    #: resources created before this at the first tick are history.
    baseline_ms: int = Field(0, alias="b")
    #: newest ``created_at`` seen; the look-back window hangs below it.
    seen_max_ms: int = Field(0, alias="m")
    tracked: dict[Id, TrackedResource] = Field(default_factory=dict, alias="t")
    #: terminal resources announced (or seen terminal) and created inside the window.
    recent_terminal: dict[Id, int] = Field(default_factory=dict, alias="r")
    #: when the ticks started failing to read the API (None: the last tick read it).
    failing_since_ms: int | None = Field(None, alias="f")

    @model_validator(mode="before")
    @classmethod
    def _from_doc(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.keys() & {"v", "kind"}:
            return data  # built in code, by field name
        doc = dict(data)
        if doc.pop("kind", None) != _KIND:
            raise ValueError("not a model-resource sensor cursor")
        version = doc.pop("v", None)
        if version != RESOURCE_CURSOR_VERSION:
            raise ValueError(f"unsupported resource cursor version {version!r}")
        return doc

    @model_serializer(mode="wrap")
    def _to_doc(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {"v": RESOURCE_CURSOR_VERSION, "kind": _KIND, **handler(self)}


@dataclass(frozen=True)
class ResourceTrackerConfig:
    """Policy knobs. ``kinds`` are the events wanted (the cap counts only those)."""

    kinds: frozenset[ResourceEventKind] = frozenset(ResourceEventKind)
    max_events: int | None = None
    #: ``resource_expiring`` when READY and ``expires_at`` is at most this far ahead.
    expiring_lead_ms: int = 10 * 60 * 1000
    #: ``resource_queued_long`` when PENDING for longer than this.
    queued_long_ms: int = 30 * 60 * 1000
    lookback_ms: int = 10 * 60 * 1000


@dataclass
class ResourceObservation:
    """One tick's complete list of (filtered) model resources."""

    now_ms: int
    resources: Sequence[ModelResource] = ()
    #: the API's clock (HTTP ``Date``), preferred over ``now_ms`` for deadlines and baselines.
    server_now_ms: int | None = None

    @property
    def clock_ms(self) -> int:
        return self.server_now_ms if self.server_now_ms is not None else self.now_ms


@dataclass
class ResourceTickOutcome:
    events: list[ResourceEvent]
    state: ResourceTrackerState
    notes: list[str]
    deferred: bool = False


def is_terminal(resource: ModelResource) -> bool:
    return resource.status in TERMINAL_RESOURCE_STATUSES


def status_changes(
    state: ResourceTrackerState, resources: Sequence[ModelResource]
) -> list[ModelResource]:
    """The resources whose status differs from the one last applied, and new live ones: where
    a billed span can begin or end. A quiet tick returns nothing. (A resource that went from
    unseen straight to a terminal status is left to the spend run.)"""
    out = []
    for r in resources:
        known = state.tracked.get(r.id)
        if (known is not None and known.status != r.raw_status) or (
            known is None and not is_terminal(r) and r.id not in state.recent_terminal
        ):
            out.append(r)
    return out


def _floor(state: ResourceTrackerState, config: ResourceTrackerConfig) -> int:
    return max(state.seen_max_ms - config.lookback_ms, state.baseline_ms)


def _due(
    entry: TrackedResource, r: ModelResource, now: int, config: ResourceTrackerConfig
) -> list[tuple[ResourceEvent, str]]:
    """The events between ``entry`` and ``r``, in order, each with the part of ``entry`` it
    settles. A status change that is no event (PENDING, CREATING, STOPPING, unknown) is
    applied to ``entry`` at once."""
    out: list[tuple[ResourceEvent, str]] = []
    status = r.status
    if r.raw_status != entry.status:
        kind = _STATUS_EVENTS.get(status)
        if kind is None or (kind is ResourceEventKind.RESOURCE_READY and entry.ready):
            entry.status = r.raw_status
        else:
            out.append((ResourceEvent(kind, r, previous_status=entry.status or None), "status"))
    if status is ModelResourceStatus.READY:
        expires = to_ms(r.expires_at)
        if (
            expires is not None
            and expires > entry.expiring_ms
            and expires - now <= config.expiring_lead_ms
        ):
            event = ResourceEvent(ResourceEventKind.RESOURCE_EXPIRING, r, expires_at_ms=expires)
            out.append((event, "expiring"))
    if status is ModelResourceStatus.PENDING and not entry.queued:
        since = to_ms(r.created_at) or entry.first_seen_ms or now
        if now - since > config.queued_long_ms:
            event = ResourceEvent(ResourceEventKind.RESOURCE_QUEUED_LONG, r, queued_ms=now - since)
            out.append((event, "queued"))
    return out


def _apply(entry: TrackedResource, event: ResourceEvent, part: str) -> None:
    if part == "status":
        entry.status = event.resource.raw_status
        entry.ready = entry.ready or event.kind is ResourceEventKind.RESOURCE_READY
    elif part == "expiring":
        entry.expiring_ms = event.expires_at_ms or 0
    elif part == "queued":
        entry.queued = True


def _quiet(
    entry: TrackedResource, r: ModelResource, now: int, config: ResourceTrackerConfig
) -> None:
    """Take ``r`` in as already announced (first tick, history)."""
    for event, part in _due(entry, r, now, config):
        _apply(entry, event, part)


def _entry_for(
    state: ResourceTrackerState,
    r: ModelResource,
    created_ms: int | None,
    floor: int,
    now: int,
    config: ResourceTrackerConfig,
) -> TrackedResource | None:
    """The entry to diff ``r`` against (new resources are registered), or None when ``r`` is
    known history or already announced."""
    known = state.tracked.get(r.id)
    if known is not None:
        return known
    if r.id in state.recent_terminal:
        return None
    if created_ms is None and is_terminal(r):
        return None  # no creation time: cannot be told from history; never re-announce
    if created_ms is not None and created_ms < floor:
        # History (or a resource the filter just let in): known, not news.
        if not is_terminal(r):
            entry = state.tracked[r.id] = TrackedResource(first_seen_ms=now)
            _quiet(entry, r, now, config)
        return None
    entry = state.tracked[r.id] = TrackedResource(first_seen_ms=now)
    return entry


def advance_resources(
    state: ResourceTrackerState, obs: ResourceObservation, config: ResourceTrackerConfig
) -> ResourceTickOutcome:
    """Apply one tick's full resource list. ``state`` is not modified."""
    state = fork(state) if state.initialized else ResourceTrackerState()
    notes: list[str] = []
    now = obs.clock_ms
    by_id: dict[str, ModelResource] = {}
    for r in obs.resources:
        by_id.setdefault(r.id, r)
    created = {rid: to_ms(r.created_at) for rid, r in by_id.items()}

    if not state.initialized:
        state.initialized = True
        state.baseline_ms = max([*(ms for ms in created.values() if ms is not None), now])
        state.seen_max_ms = state.baseline_ms
        for rid, r in by_id.items():
            if not is_terminal(r):
                first = state.tracked[rid] = TrackedResource(first_seen_ms=now)
                _quiet(first, r, now, config)
            elif (ms := created[rid]) is not None and ms >= state.baseline_ms:
                state.recent_terminal[rid] = ms
        return ResourceTickOutcome([], state, notes)

    for rid in [rid for rid in state.tracked if rid not in by_id]:
        del state.tracked[rid]
        notes.append(f"model resource {rid} is no longer listed by the API; no longer tracked")

    floor = _floor(state, config)
    events: list[ResourceEvent] = []
    deferred = False
    ordered = sorted(by_id.values(), key=lambda r: (created[r.id] or 0, r.id))
    for i, r in enumerate(ordered):
        entry = _entry_for(state, r, created.get(r.id), floor, now, config)
        if entry is None:
            continue
        for event, part in _due(entry, r, now, config):
            if event.kind in config.kinds:
                if config.max_events is not None and len(events) >= config.max_events:
                    deferred = True
                    break
                events.append(event)
            _apply(entry, event, part)
        if deferred:
            # Track every new resource not reached yet, so the window moving past its
            # creation time cannot turn it into history: its events follow next tick.
            for rest in ordered[i + 1 :]:
                _entry_for(state, rest, created.get(rest.id), floor, now, config)
            break
        if is_terminal(r) and entry.status == r.raw_status:
            del state.tracked[r.id]
            ms = created[r.id]
            state.recent_terminal[r.id] = ms if ms is not None else state.seen_max_ms

    for ms in created.values():
        if ms is not None and ms > state.seen_max_ms:
            state.seen_max_ms = ms
    floor = _floor(state, config)
    state.recent_terminal = {k: v for k, v in state.recent_terminal.items() if v >= floor}
    return ResourceTickOutcome(events, state, notes, deferred=deferred)
