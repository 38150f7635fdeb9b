"""The world's state, lock and timers, and the model resource lifecycle (GPU queue, provisioning,
stop, inactivity expiry, failure). Timers sit in a heap, applied lazily in time order by every
``@locked`` call and stamped with the time they were due, not the time somebody looked."""

from __future__ import annotations

import functools
import heapq
import itertools
import random
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from . import wire
from .state import Checkpoint, Operation, OrderedIndex, Resource, Session, SimClock, StopRequest
from .wire import US, SimulatorError, bad_request, full_status, not_found

ListOrder = Literal["newest_first", "oldest_first", "unordered"]
LIST_ORDERS: tuple[ListOrder, ...] = ("newest_first", "oldest_first", "unordered")
_HOLDS_GPUS = wire.RESOURCE_STATUSES[:4]  # PENDING, CREATING, READY, STOPPING
DEFAULT = "default"  # registration shape: the session's (or the world's) own
DEFAULT_LORA_CONFIG: dict[str, Any] = dict(rank=32, alpha=64, dropout=0.0, train_unembed=True)
W = TypeVar("W", bound="Lifecycle")
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
Timer = Callable[[int], Any]


def locked(fn: Callable[Concatenate[W, P], R]) -> Callable[Concatenate[W, P], R]:
    @functools.wraps(fn)
    def wrapper(self: W, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.transaction():
            return fn(self, *args, **kwargs)

    return wrapper


def check_list_order(order: str) -> None:
    if order not in LIST_ORDERS:
        raise ValueError(f"list order must be one of {', '.join(LIST_ORDERS)}, not {order!r}")


def session_status(name: str) -> str:
    return full_status(name, wire.SESSION_STATUSES)


class Lifecycle:
    """State and control calls of the world (settings: see :class:`SimulatedWorld`)."""

    session_start_delay: float
    session_stop_delay: float
    resource_provision_delay: float
    resource_stop_delay: float
    response_hook: Callable[[str, Any], Any] | None

    def __init__(self, seed: int, clock: SimClock, user_id: str, list_order: ListOrder) -> None:
        check_list_order(list_order)
        self._lock, self._depth = threading.RLock(), 0
        self.seed, self.clock, self.user_id, self._list_order = seed, clock, user_id, list_order
        self._rng = random.Random(seed)
        self._resources: dict[str, Resource] = {}
        self._sessions: dict[str, Session] = {}
        self._checkpoints: dict[str, Checkpoint] = {}
        self._session_index, self._resource_index = OrderedIndex(), OrderedIndex()
        self._checkpoint_index = OrderedIndex()
        self._timers: list[tuple[int, int, Any, tuple[str, ...], Timer]] = []
        self._timer_seq = itertools.count()
        self._chat_names: dict[str, str] | None = None  # built on first use
        self._stop_requests: list[StopRequest] = []
        self._fail_next_creates: list[tuple[str, str]] = []
        self._gpu_capacity: dict[str, int | None] = {}  # None: unlimited
        self._operations: dict[str, Operation] = {}
        self._idempotency: dict[tuple[str, str, str], str] = {}
        self._fail_next_ops: list[tuple[str | None, str, str]] = []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the lock across several calls, so a change and its response see one state."""
        with self._lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    self._tick()
                yield
            finally:
                self._depth -= 1

    # Session transitions that resource timers and stops trigger (defined in .sessions).
    def _start(self, s: Session, at: int) -> None: ...
    def _stop(self, s: Session, at: int, *, immediate: bool) -> None: ...
    def _fail(self, s: Session, code: str | None, message: str | None, at: int) -> None: ...

    def _new_id(self) -> str:
        return new_uuid(self._rng)

    def _now(self) -> int:
        return self.clock.now_us()

    def _later(self, due: int, item: Session | Resource, statuses: tuple[str, ...],
               then: Timer) -> None:  # fmt: skip
        """At ``due``, if ``item`` is still in one of ``statuses``, ``then(due)``."""
        heapq.heappush(self._timers, (due, next(self._timer_seq), item, statuses, then))

    def _tick(self) -> None:
        timers, now = self._timers, self._now()
        while timers and timers[0][0] <= now:
            due, _, item, statuses, then = heapq.heappop(timers)
            if item.status in statuses:
                then(due)

    def _expire_when_idle(self, r: Resource, due: int) -> None:
        def check(at: int) -> None:
            expires = r.stop_due() or at  # activity since moved it: check again then
            if expires > self._now():
                self._expire_when_idle(r, expires)
            else:
                self._expire(r, expires)

        self._later(due, r, (wire.RESOURCE_READY,), check)

    def _session(self, ident: str) -> Session:
        return get_or_404(self._sessions, ident, "training session", "session_id")

    def _resource(self, ident: str, param: str | None = "model_resources_id") -> Resource:
        return get_or_404(self._resources, ident, "model resource", param)

    def _checkpoint(self, ident: str) -> Checkpoint:
        return get_or_404(self._checkpoints, ident, "checkpoint", "checkpoint_id")

    def _key(self, item: Session | Resource) -> tuple[int, str]:
        # Pages read keys in descending order: oldest first negates the time.
        if self._list_order == "newest_first":
            return (item.created_at, item.id)
        if self._list_order == "oldest_first":
            return (-item.created_at, item.id)
        return (zlib.crc32(item.id.encode()), item.id)  # stable, unrelated to time

    def _touch(self, item: Session | Resource, at: int) -> None:
        """A change: ``updated_at`` moves (never backwards) and the cached JSON goes."""
        item.updated_at = max(item.updated_at, at)
        item.json = None

    def _set_session_status(self, s: Session, status: str, at: int) -> None:
        if status != s.status:
            self._session_index.move(self._key(s), s.status, status)
            s.status = status
        self._touch(s, at)

    def _set_resource_status(self, r: Resource, status: str, at: int) -> None:
        old = r.status
        if status != old:
            self._resource_index.move(self._key(r), old, status)
            r.status = status
            if status == wire.RESOURCE_READY and r.ready_at is None:
                r.ready_at = at
            elif old == wire.RESOURCE_READY and r.unready_at is None:
                r.unready_at = at
            if status not in (wire.RESOURCE_PENDING, wire.RESOURCE_STOPPING):
                r.queued = False  # a queued resource being stopped never held GPUs
            gone = (wire.RESOURCE_STOPPED, wire.RESOURCE_ERROR)
            if status in gone and old not in gone:
                self._admit(at)  # its GPUs are free for the next in the queue
        self._touch(r, at)

    def _active_sessions(self, r: Resource) -> list[Session]:
        """Sessions holding a slot on ``r``: every non-terminal status, unknown ones included."""
        on_it = (self._sessions[i] for i in r.session_ids)
        return [s for s in on_it if s.status not in wire.SESSION_TERMINAL]

    def _record_activity(self, r: Resource, at: int) -> None:
        """Activity restarts the inactivity countdown; the shown ``expires_at`` is refreshed at
        most once a minute (like the API's); the real stop uses the true activity."""
        if at > r.last_activity:
            r.last_activity = at
            if at - r.published_activity >= 60 * US or not r.published_activity:
                r.published_activity = at
            r.json = None

    @locked
    def create_model_resource(
        self, base_model: str = wire.DEFAULT_BASE_MODEL, *, lora: bool = True,
        inactive_timeout: int = 3600, status: str = "READY", created_by: str | None = None,
        num_generator_replicas: int = 1, base_weights_ref: str | None = None,
        optimizer: dict[str, Any] | None = None, gpu_type: str = "B200-SXM",
    ) -> str:  # fmt: skip
        """``"PENDING"`` provisions it once GPU capacity allows; other statuses are set as-is."""
        now, status = self._now(), full_status(status, wire.RESOURCE_STATUSES)
        r = Resource(self._new_id(), base_model, lora, int(inactive_timeout), status, now, now,
                     created_by or self.user_id, num_generator_replicas, gpu_type,
                     optimizer or {"adam": {}}, base_weights_ref)  # fmt: skip
        self._resources[r.id] = r
        self._resource_index.add(self._key(r), r.status)
        if status == wire.RESOURCE_PENDING:
            r.queued = True
            self._admit(now)
        elif status == wire.RESOURCE_READY:
            self._become_ready(r, now)
        return r.id

    def _admit(self, at: int) -> None:
        """Start provisioning queued resources while capacity allows, oldest first."""
        for r in self._queued():
            cap = self._gpu_capacity.get(r.gpu_type)
            holding = sum(1 for o in self._resources.values()
                          if o.gpu_type == r.gpu_type and not o.queued and o.status in _HOLDS_GPUS)  # fmt: skip
            if cap is None or holding < cap:
                r.queued, r.json = False, None
                delay, pending = round(self.resource_provision_delay * US), (wire.RESOURCE_PENDING,)
                creating = partial(self._set_resource_status, r, wire.RESOURCE_CREATING)
                self._later(at + delay // 2, r, pending, creating)
                self._later(at + delay, r, (*pending, wire.RESOURCE_CREATING), partial(self._become_ready, r))  # fmt: skip

    def _queued(self) -> list[Resource]:
        waiting = (r for r in self._resources.values() if r.queued and r.status == wire.RESOURCE_PENDING)  # fmt: skip
        return sorted(waiting, key=lambda r: (r.created_at, r.id))

    def _become_ready(self, r: Resource, at: int) -> None:
        self._set_resource_status(r, wire.RESOURCE_READY, at)
        if r.ready_at is None:  # created READY: no status change marked the start of billing
            r.ready_at = at
        self._record_activity(r, at)
        self._expire_when_idle(r, r.stop_due() or at)

    @locked
    def set_gpu_capacity(self, gpu_type: str, n: int | None) -> None:
        """At most ``n`` resources of ``gpu_type`` hold GPUs at once (None: unlimited)."""
        if n is not None and n < 0:
            raise ValueError(f"capacity must be >= 0, got {n}")
        self._gpu_capacity[gpu_type] = n
        self._admit(self._now())

    @locked
    def queued_resources(self) -> list[str]:
        return [r.id for r in self._queued()]

    @locked
    def stop_model_resource(self, resource_id: str, *, force: bool = False) -> None:
        """A forced stop also stops every attached session."""
        r, now = self._resource(resource_id), self._now()
        active = self._active_sessions(r)
        gone = r.status in (wire.RESOURCE_STOPPING, wire.RESOURCE_STOPPED, wire.RESOURCE_ERROR)
        seen = tuple((s.id, s.status, s.created_at, s.updated_at)
                     for s in map(self._sessions.__getitem__, r.session_ids))  # fmt: skip
        accepted = not r.protected and not gone and (force or not active)
        self._stop_requests.append(StopRequest(r.id, now, r.status, force, accepted, seen, r.ready_at))  # fmt: skip
        if r.protected:
            raise SimulatorError(403, f"not allowed to stop model resource {r.id}", code="permission_denied")  # fmt: skip
        if gone:
            raise bad_request(f"model resource {r.id} is already {r.status}", code="not_active")
        if active and not force:
            raise bad_request(f"model resource {r.id} has {len(active)} active session(s); pass force=true",
                              param="force", code="sessions_active")  # fmt: skip
        for s in active:
            self._stop(s, now, immediate=False)
        self._set_resource_status(r, wire.RESOURCE_STOPPING, now)
        self._later(now + round(self.resource_stop_delay * US), r, (wire.RESOURCE_STOPPING,),
                    lambda t: self._set_resource_status(r, wire.RESOURCE_STOPPED, t))  # fmt: skip

    @locked
    def stop_requests(self) -> list[StopRequest]:
        """Every stop asked of the world, refused ones too."""
        return list(self._stop_requests)

    @locked
    def extend_expiry(self, resource_id: str, seconds: float) -> None:
        r = self._resource(resource_id)
        if r.status != wire.RESOURCE_READY:
            raise bad_request(f"model resource {r.id} is {r.status}, not READY", code="not_ready")
        r.expiry_floor = max(r.expiry_floor, self._now() + round(seconds * US))
        r.json = None

    @locked
    def expire_resource(self, resource_id: str) -> None:
        """Stop the resource for inactivity now: STOPPED, its sessions EXPIRED."""
        self._expire(self._resource(resource_id), self._now())

    def _expire(self, r: Resource, at: int) -> None:
        for s in self._active_sessions(r):  # STOPPING ones included
            self._set_session_status(s, wire.SESSION_EXPIRED, at)
        self._set_resource_status(r, wire.RESOURCE_STOPPED, at)

    @locked
    def fail_model_resource(self, resource_id: str, *, code: str = wire.PROVISIONING_FAILED,
                            message: str = "The model resource failed.") -> None:  # fmt: skip
        """ERROR; its active sessions go ERROR/RESOURCE_UNAVAILABLE (a guess: undocumented)."""
        r, now = self._resource(resource_id), self._now()
        for s in self._active_sessions(r):
            self._fail(s, wire.UNAVAILABLE, None, now)
        r.error = (code, message, now)
        self._set_resource_status(r, wire.RESOURCE_ERROR, now)

    @locked
    def protect_resource(self, resource_id: str, protected: bool = True) -> None:
        self._resource(resource_id).protected = protected


def get_or_404(table: dict[str, T], ident: str, kind: str, param: str | None) -> T:
    if ident not in table:
        raise not_found(kind, ident, param)
    return table[ident]


def new_uuid(rng: random.Random) -> str:
    """A uuid4 string from a seeded RNG, so a seeded world is reproducible."""
    n = rng.getrandbits(128)
    h = f"{(n & ~(0xF000 << 64) | (0x4000 << 64)) & ~(0xC000 << 48) | (0x8000 << 48):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
