"""In-memory records of the simulated service and the locked base class of the world.

Records are plain slotted dataclasses (cheap to build 1M of them in ``populate``); each one that
is served often caches its serialized JSON in ``json`` and drops it whenever it changes. All
mutation goes through :class:`WorldBase` helpers so indices, caches and ``updated_at`` stay in
step, always under the world's single re-entrant lock.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import random
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from .clock import SimClock
from .constants import (
    CHECKPOINT_INFERENCE,
    FULL_WEIGHT_SESSION_CAP,
    LORA_SESSION_CAP,
    RESOURCE_ERROR,
    RESOURCE_PENDING,
    RESOURCE_READY,
    RESOURCE_STOPPED,
    RESOURCE_STOPPING,
    SESSION_TERMINAL,
)
from .errors import not_found
from .index import Key, OrderedIndex

#: ``(code or None, message, occurred_at µs)`` — ``code`` None omits it from the wire (old shape).
ErrorInfo = tuple[str | None, str, int]
ListOrder = Literal["newest_first", "oldest_first", "unordered"]
LIST_ORDERS: tuple[ListOrder, ...] = ("newest_first", "oldest_first", "unordered")
ResponseHook = Callable[[str, Any], Any]
US = 1_000_000


@dataclass(slots=True, eq=False)
class Checkpoint:
    """An inference or training checkpoint; registry ids are derived from ``id`` when emitted."""

    id: str
    session_id: str
    kind: str
    step: int
    created_at: int
    shape: str | None
    registered_at: int | None
    json: bytes | None = None

    @property
    def is_inference(self) -> bool:
        return self.kind == CHECKPOINT_INFERENCE


@dataclass(slots=True, eq=False)
class Session:
    """A training session, with the wire-format quirks it emits (shape, int64-as-string)."""

    id: str
    resource_id: str
    base_model: str
    status: str
    created_at: int
    updated_at: int
    created_by: str
    shape: str | None
    int64_as_string: bool
    adapter: bool
    display_name: str | None = None
    wandb: dict[str, str] | None = None
    lora: dict[str, Any] | None = None
    step: int = 0
    trainer_step: int = 0
    target_wv: int = 0
    applied_wv: int = 0
    pending_publish: bool = False
    error: ErrorInfo | None = None
    resume_from: str | None = None
    fail_code: str | None = None
    fail_message: str | None = None
    inference: list[Checkpoint] = field(default_factory=list)
    training: list[Checkpoint] = field(default_factory=list)
    drop_fields: tuple[str, ...] = ()
    extra_fields: dict[str, Any] | None = None
    json: bytes | None = None


@dataclass(frozen=True)
class StopRequest:
    """A stop the world was asked for, with what was on the resource at that instant: the
    oracle for "never stopped a GPU in use" (``stop_requests()``)."""

    resource_id: str
    at_us: int
    status: str
    force: bool
    accepted: bool
    #: (session id, status, created µs, updated µs) of every session ever on the resource.
    sessions: tuple[tuple[str, str, int, int], ...]
    ready_at_us: int | None


@dataclass(slots=True, eq=False)
class Resource:
    """A model resource (GPU allocation) that sessions attach to."""

    id: str
    base_model: str
    lora_enabled: bool
    inactive_timeout: int
    status: str
    created_at: int
    updated_at: int
    created_by: str
    num_generator_replicas: int = 1
    gpu_type: str = "B200-SXM"
    optimizer: dict[str, Any] = field(default_factory=lambda: {"adam": {}})
    base_weights_ref: str | None = None
    last_activity: int = 0
    #: the activity time ``expires_at`` shows: refreshed at most once per ``expiry_refresh``.
    published_activity: int = 0
    expiry_floor: int = 0
    error: ErrorInfo | None = None
    session_ids: list[str] = field(default_factory=list)
    json: bytes | None = None
    #: billing: when it first became READY and when it left READY (µs), for spend oracles.
    ready_at: int | None = None
    unready_at: int | None = None
    #: waiting for GPU capacity (PENDING, not yet provisioning).
    queued: bool = False
    #: stop is refused with 403 (a resource the caller may not stop).
    protected: bool = False

    @property
    def cap(self) -> int:
        return LORA_SESSION_CAP if self.lora_enabled else FULL_WEIGHT_SESSION_CAP

    def expires_at(self) -> int | None:
        """What the API shows while READY: the last *published* activity + ``inactive_timeout``
        (or a later extend-expiry floor). Never later than :meth:`stop_due`, never moves earlier."""
        if self.status != RESOURCE_READY:
            return None
        return max(self.published_activity + self.inactive_timeout * US, self.expiry_floor)

    def stop_due(self) -> int | None:
        """When inactivity really stops it: the true last activity + ``inactive_timeout``."""
        if self.status != RESOURCE_READY:
            return None
        return max(self.last_activity + self.inactive_timeout * US, self.expiry_floor)


@dataclass(slots=True, eq=False)
class Operation:
    """An async operation; completes after ``polls_needed`` GETs (0 = already done on submit)."""

    id: str
    session_id: str
    kind: str
    status: str
    polls_needed: int
    body: dict[str, Any]
    idempotency_key: str
    created_at: int
    polls_seen: int = 0
    output: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    fail_with: tuple[str, str] | None = None


W = TypeVar("W", bound="WorldBase")
P = ParamSpec("P")
R = TypeVar("R")


def locked(fn: Callable[Concatenate[W, P], R]) -> Callable[Concatenate[W, P], R]:
    """Run a world method under the lock, applying due timers once per outermost call."""

    @functools.wraps(fn)
    def wrapper(self: W, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    self._tick()
                return fn(self, *args, **kwargs)
            finally:
                self._depth -= 1

    return wrapper


def _unordered_value(ident: str) -> int:
    # A stable pseudo-random position unrelated to creation time.
    return zlib.crc32(ident.encode())


class WorldBase:
    """State, lock, timers and the low-level mutation helpers shared by the world's mixins."""

    def __init__(self, *, seed: int, clock: SimClock, user_id: str, list_order: ListOrder) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self.seed = seed
        self.clock = clock
        self.user_id = user_id
        self._rng = random.Random(seed)
        self._list_order: ListOrder = list_order
        self._resources: dict[str, Resource] = {}
        self._sessions: dict[str, Session] = {}
        self._checkpoints: dict[str, Checkpoint] = {}
        self._operations: dict[str, Operation] = {}
        self._idempotency: dict[tuple[str, str, str], str] = {}
        self._session_index = OrderedIndex()
        self._resource_index = OrderedIndex()
        self._checkpoint_index = OrderedIndex()
        self._timers: list[tuple[int, int, str, str]] = []
        self._timer_seq = itertools.count()
        self._chat_names: dict[str, str] | None = None
        self.response_hook: ResponseHook | None = None
        self.expiry_refresh_us = 60 * US
        self._stop_requests: list[StopRequest] = []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the lock across several calls (timers are applied once, at the start), so e.g.
        a create and the serialization of its response see the same state."""
        with self._lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    self._tick()
                yield
            finally:
                self._depth -= 1

    # --- ids, time, timers -----------------------------------------------------------------
    def _new_id(self) -> str:
        """A uuid4 string from the seeded RNG, so a seeded world is reproducible."""
        n = self._rng.getrandbits(128)
        n = (n & ~(0xF000 << 64) | (0x4000 << 64)) & ~(0xC000 << 48) | (0x8000 << 48)
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _now(self) -> int:
        return self.clock.now_us()

    def _schedule(self, due: int, kind: str, target: str) -> None:
        heapq.heappush(self._timers, (due, next(self._timer_seq), kind, target))

    def _tick(self) -> None:
        """Apply every timer that is due, in time order (lazily, whenever the world is used)."""
        timers = self._timers
        if not timers:
            return
        now = self._now()
        while timers and timers[0][0] <= now:
            due, _, kind, target = heapq.heappop(timers)
            self._on_timer(kind, target, due, now)

    def _on_timer(self, kind: str, target: str, due: int, now: int) -> None:
        raise NotImplementedError  # provided by LifecycleMixin

    # --- lookups ---------------------------------------------------------------------------
    def _session(self, ident: str, param: str | None = "session_id") -> Session:
        s = self._sessions.get(ident)
        if s is None:
            raise not_found("training session", ident, param)
        return s

    def _resource(self, ident: str, param: str | None = "model_resources_id") -> Resource:
        r = self._resources.get(ident)
        if r is None:
            raise not_found("model resource", ident, param)
        return r

    def _checkpoint(self, ident: str, param: str | None = "checkpoint_id") -> Checkpoint:
        c = self._checkpoints.get(ident)
        if c is None:
            raise not_found("checkpoint", ident, param)
        return c

    # --- keys and indices ------------------------------------------------------------------
    def _session_key(self, s: Session) -> Key:
        # Pages are read in descending key order: oldest first negates the time.
        if self._list_order == "newest_first":
            return (s.created_at, s.id)
        if self._list_order == "oldest_first":
            return (-s.created_at, s.id)
        return (_unordered_value(s.id), s.id)

    def _resource_key(self, r: Resource) -> Key:
        if self._list_order == "newest_first":
            return (r.created_at, r.id)
        if self._list_order == "oldest_first":
            return (-r.created_at, r.id)
        return (_unordered_value(r.id), r.id)

    @staticmethod
    def _checkpoint_key(c: Checkpoint) -> Key:
        return (c.created_at, c.id)

    def _rebuild_indices(self) -> None:
        self._session_index.clear()
        self._session_index.load((self._session_key(s), s.status) for s in self._sessions.values())
        self._resource_index.clear()
        self._resource_index.load(
            (self._resource_key(r), r.status) for r in self._resources.values()
        )

    # --- mutation helpers (callers hold the lock) ------------------------------------------
    def _touch_session(self, s: Session, at: int) -> None:
        """Record a change: bump ``updated_at`` (never backwards) and drop the JSON cache."""
        if at > s.updated_at:
            s.updated_at = at
        s.json = None

    def _set_session_status(self, s: Session, status: str, at: int) -> None:
        if status != s.status:
            self._session_index.move(self._session_key(s), s.status, status)
            s.status = status
        self._touch_session(s, at)

    def _touch_resource(self, r: Resource, at: int) -> None:
        if at > r.updated_at:
            r.updated_at = at
        r.json = None

    def _set_resource_status(self, r: Resource, status: str, at: int) -> None:
        if status != r.status:
            self._resource_index.move(self._resource_key(r), r.status, status)
            old, r.status = r.status, status
            if status == RESOURCE_READY and r.ready_at is None:
                r.ready_at = at
            elif old == RESOURCE_READY and r.unready_at is None:
                r.unready_at = at
            if status not in (RESOURCE_PENDING, RESOURCE_STOPPING):
                r.queued = False  # a queued resource being stopped never held GPUs
            if status in (RESOURCE_STOPPED, RESOURCE_ERROR) and old not in (
                RESOURCE_STOPPED,
                RESOURCE_ERROR,
            ):
                self._resource_released(r, at)
        self._touch_resource(r, at)

    def _resource_released(self, r: Resource, at: int) -> None:
        """A resource gave its GPUs back (the capacity queue may admit the next one)."""

    def _add_session_record(self, s: Session) -> None:
        self._sessions[s.id] = s
        self._session_index.add(self._session_key(s), s.status)
        self._resources[s.resource_id].session_ids.append(s.id)

    def _add_resource_record(self, r: Resource) -> None:
        self._resources[r.id] = r
        self._resource_index.add(self._resource_key(r), r.status)

    def _active_sessions(self, r: Resource) -> list[Session]:
        """Sessions holding a slot on ``r``: every non-terminal status, unknown ones included."""
        sessions = self._sessions
        return [s for sid in r.session_ids if (s := sessions[sid]).status not in SESSION_TERMINAL]

    def _record_activity(self, r: Resource, at: int) -> None:
        """Activity restarts the inactivity countdown (``expires_at`` only moves later, and the
        shown value is refreshed at most once per ``expiry_refresh_us``, like the API's)."""
        if at > r.last_activity:
            r.last_activity = at
            if at - r.published_activity >= self.expiry_refresh_us or not r.published_activity:
                r.published_activity = at
            r.json = None
