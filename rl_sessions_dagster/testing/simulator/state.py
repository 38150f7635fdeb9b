"""The world's records (slotted: ``populate`` builds 1M), its clock (integer microseconds: float
seconds lose the last digit around 2026) and sorted list indices: pages read ``(sort value, id)``
keys descending, strictly below the ``after`` item's, so a cursor survives inserts and status
changes between pages, in O(log n + page)."""

from __future__ import annotations

import heapq
import time
from bisect import bisect_left, insort
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from .wire import CHECKPOINT_INFERENCE, LORA_SESSION_CAP, RESOURCE_READY, US

ClockMode = Literal["real", "manual"]
#: ``(code or None, message, occurred_at µs)``; ``code`` None omits it from the wire (old shape).
ErrorInfo = tuple[str | None, str, int]
Key = tuple[int, str]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SimClock:
    """``"real"``: UTC now plus the advanced offset; ``"manual"``: ``start`` (fixed by default,
    so seeded worlds are reproducible) plus the offset."""

    def __init__(self, mode: ClockMode = "real", start: datetime | None = None) -> None:
        if mode not in ("real", "manual"):
            raise ValueError(f"clock must be 'real' or 'manual', not {mode!r}")
        self.mode: ClockMode = mode
        self._offset_us = 0
        start = start or datetime(2026, 11, 29, 12, tzinfo=UTC)
        self._start_us = (start.replace(tzinfo=start.tzinfo or UTC) - _EPOCH) // (_EPOCH.resolution)

    def now_us(self) -> int:
        base = self._start_us if self.mode == "manual" else time.time_ns() // 1000
        return base + self._offset_us

    def now(self) -> datetime:
        us = self.now_us()
        return datetime.fromtimestamp(us // US, tz=UTC).replace(microsecond=us % US)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset_us += round(seconds * US)


@dataclass(slots=True, eq=False)
class Checkpoint:
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
    id: str
    resource_id: str
    base_model: str
    status: str
    created_at: int
    updated_at: int
    created_by: str
    shape: str | None
    adapter: bool
    int64_as_string: bool = False
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
    #: set at creation: the start ends in ERROR with this code and message instead of RUNNING.
    fail_with: tuple[str, str | None] | None = None
    inference: list[Checkpoint] = field(default_factory=list)
    training: list[Checkpoint] = field(default_factory=list)
    drop_fields: tuple[str, ...] = ()
    extra_fields: dict[str, Any] | None = None
    json: bytes | None = None


@dataclass(frozen=True)
class StopRequest:
    """A stop asked and what the resource held then: the "never stopped a GPU in use" oracle."""

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
    #: the activity ``expires_at`` shows: refreshed at most once a minute.
    published_activity: int = 0
    expiry_floor: int = 0
    error: ErrorInfo | None = None
    session_ids: list[str] = field(default_factory=list)
    json: bytes | None = None
    #: billing: when it first became READY and when it left READY (µs).
    ready_at: int | None = None
    unready_at: int | None = None
    queued: bool = False  # PENDING, waiting for GPU capacity (not yet provisioning)
    protected: bool = False  # stop answers 403

    @property
    def cap(self) -> int:
        return LORA_SESSION_CAP if self.lora_enabled else 1

    def expires_at(self) -> int | None:
        """What the API shows while READY: the last *published* activity + ``inactive_timeout``
        (or a later extend-expiry floor); never later than :meth:`stop_due`."""
        return self._due(self.published_activity)

    def stop_due(self) -> int | None:
        """When inactivity really stops it: the true last activity + ``inactive_timeout``."""
        return self._due(self.last_activity)

    def _due(self, activity: int) -> int | None:
        if self.status != RESOURCE_READY:
            return None
        return max(activity + self.inactive_timeout * US, self.expiry_floor)


@dataclass(slots=True, eq=False)
class Operation:
    """An async operation; completes on its ``polls_needed``-th GET (0: done on submit)."""

    id: str
    session_id: str
    kind: str
    status: str
    polls_needed: int
    body: dict[str, Any]
    created_at: int
    polls_seen: int = 0
    output: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    fail_with: tuple[str, str] | None = None


def _desc(keys: list[Key], after: Key | None) -> Iterator[Key]:
    end = len(keys) if after is None else bisect_left(keys, after)
    return map(keys.__getitem__, range(end - 1, -1, -1))


class OrderedIndex:
    """Keys sorted ascending, partitioned by a status (or type) string; read largest first."""

    __slots__ = ("_all", "_parts")

    def __init__(self) -> None:
        self._all: list[Key] = []
        self._parts: dict[str, list[Key]] = {}

    def add(self, key: Key, part: str) -> None:
        insort(self._all, key)
        insort(self._parts.setdefault(part, []), key)

    def move(self, key: Key, old: str, new: str) -> None:
        keys = self._parts.get(old, [])
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            del keys[i]
        insort(self._parts.setdefault(new, []), key)

    def load(self, items: Iterable[tuple[Key, str]], *, clear: bool = False) -> None:
        """Bulk insert, sorting once."""
        if clear:
            self._all, self._parts = [], {}
        for key, part in items:
            self._all.append(key)
            self._parts.setdefault(part, []).append(key)
        self._all.sort()
        for keys in self._parts.values():
            keys.sort()

    def iter_desc(self, after: Key | None, parts: Collection[str] | None = None) -> Iterator[Key]:
        """Keys strictly below ``after`` (all if None), largest first, optionally per partition."""
        if parts is None:
            return _desc(self._all, after)
        lists = [self._parts[p] for p in set(parts) if self._parts.get(p)]
        if len(lists) <= 1:
            return _desc(lists[0], after) if lists else iter(())
        return heapq.merge(*(_desc(keys, after) for keys in lists), reverse=True)

    def part_counts(self) -> dict[str, int]:
        return {p: len(keys) for p, keys in self._parts.items() if keys}
