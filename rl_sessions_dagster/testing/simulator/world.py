"""``SimulatedWorld``: the in-memory Together RL account behind the simulator, usable on its
own. This module holds its settings, clock, list order, reads, prices and billing."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from hashlib import blake2b
from itertools import islice
from typing import Any

from . import wire
from .lifecycle import ListOrder, check_list_order, locked, session_status
from .populate import populate_world
from .sessions import Sessions
from .state import ClockMode, Key, OrderedIndex, Resource, SimClock
from .wire import US, bad_request


class SimulatedWorld(Sessions):
    """Thread-safe state of a simulated Together RL account; ``seed`` fixes every id and choice.
    ``clock="manual"`` freezes time at ``start`` (default 2026-11-29T12:00Z) until
    :meth:`advance_clock`; ``created_by=me`` means ``user_id``; ``list_order``: ``newest_first``,
    ``oldest_first`` or ``unordered`` (stable, unrelated to time). The delays are seconds an HTTP
    session stays CREATING or STOPPING, a resource PENDING+CREATING or STOPPING; an operation
    completes after ``operation_polls`` GETs; ``response_hook(path, payload) -> payload``
    rewrites every ``/v1`` JSON response (drift tests)."""

    def __init__(
        self, *, seed: int = 0, clock: ClockMode = "real", start: datetime | None = None,
        user_id: str = "user_sim", list_order: ListOrder = "newest_first",
        session_start_delay: float = 0.0, session_stop_delay: float = 0.0,
        resource_provision_delay: float = 0.0, resource_stop_delay: float = 0.0,
        operation_polls: int = 1,
    ) -> None:  # fmt: skip
        super().__init__(seed, SimClock(clock, start), user_id, list_order)
        self.session_start_delay, self.session_stop_delay = session_start_delay, session_stop_delay
        self.resource_provision_delay = resource_provision_delay
        self.resource_stop_delay, self.operation_polls = resource_stop_delay, operation_polls
        self.response_hook = None
        self._prices: dict[str, float] = {}

    @locked
    def now(self) -> datetime:
        return self.clock.now()

    def advance_clock(self, seconds: float) -> None:
        with self._lock:
            self.clock.advance(seconds)
            self._tick()

    @property
    def list_order(self) -> ListOrder:
        return self._list_order

    @locked
    def set_list_order(self, order: ListOrder) -> None:
        check_list_order(order)
        self._list_order = order
        indices = ((self._session_index, self._sessions), (self._resource_index, self._resources))
        for index, items in indices:
            index.load(((self._key(x), x.status) for x in items.values()), clear=True)

    populate = locked(populate_world)

    @locked
    def session(self, session_id: str) -> dict[str, Any]:
        return json.loads(self.session_json(session_id))

    @locked
    def session_ids(self, status: str | Iterable[str] | None = None) -> list[str]:
        """Ids in list order, optionally of some statuses (short names accepted)."""
        names = None if status is None else [status] if isinstance(status, str) else list(status)
        parts = None if names is None else [session_status(n) for n in names]
        return [k[1] for k in self._session_index.iter_desc(None, parts)]

    @locked
    def sessions(self, status: str | Iterable[str] | None = None) -> list[dict[str, Any]]:
        return [json.loads(wire.session_bytes(self._sessions[i])) for i in self.session_ids(status)]

    @locked
    def checkpoint(self, checkpoint_id: str) -> dict[str, Any]:
        return json.loads(self.checkpoint_json(checkpoint_id))

    @locked
    def checkpoints(self, session_id: str | None = None, type: str | None = None) -> list[Any]:
        page = self.page_checkpoints(limit=10**9, session_id=session_id, type=type)
        return json.loads(page)["data"]

    @locked
    def model_resource(self, resource_id: str) -> dict[str, Any]:
        return json.loads(self.resource_json(resource_id))

    @locked
    def model_resources(self) -> list[dict[str, Any]]:
        keys = self._resource_index.iter_desc(None)
        return [json.loads(self._resource_bytes(self._resources[k[1]])) for k in keys]

    @locked
    def counts(self) -> dict[str, Any]:
        return {
            "sessions": len(self._sessions),
            "sessions_by_status": self._session_index.part_counts(),
            "model_resources": len(self._resources),
            "model_resources_by_status": self._resource_index.part_counts(),
            "checkpoints": len(self._checkpoints),
            "checkpoints_by_type": self._checkpoint_index.part_counts(),
            "operations": len(self._operations),
        }

    @locked
    def session_json(self, session_id: str) -> bytes:
        return wire.session_bytes(self._session(session_id))

    @locked
    def resource_json(self, resource_id: str) -> bytes:
        return self._resource_bytes(self._resource(resource_id))

    @locked
    def checkpoint_json(self, checkpoint_id: str) -> bytes:
        ck = self._checkpoint(checkpoint_id)
        return wire.checkpoint_bytes(ck, self._sessions[ck.session_id])

    def _resource_bytes(self, r: Resource) -> bytes:
        if r.status != wire.RESOURCE_PENDING or not r.queued:
            return wire.resource_bytes(r)  # provisioning ones wait only for their pods: position 1
        older = [o for o in self._queued() if o.gpu_type == r.gpu_type]
        return wire.resource_bytes(r, older.index(r) + 1)

    @locked
    def page_sessions(
        self, *, limit: int = 20, after: str | None = None, statuses: Collection[str] | None = None,
        resource_id: str | None = None, created_by: str | None = None,
    ) -> bytes:  # fmt: skip
        ss, r = self._sessions, self._resources.get(resource_id or "")
        own = None if resource_id is None else [ss[i] for i in (r.session_ids if r else [])]
        return _page(self._session_index, ss, self._key, limit, after, statuses, own,
                     lambda s: (not statuses or s.status in statuses)
                     and created_by in (None, s.created_by), wire.session_bytes)  # fmt: skip

    @locked
    def page_checkpoints(
        self, *, limit: int = 20, after: str | None = None, session_id: str | None = None,
        type: str | None = None, base_model: str | None = None,
    ) -> bytes:  # fmt: skip
        ckpts, ss, s = self._checkpoints, self._sessions, self._sessions.get(session_id or "")
        own = None if session_id is None else (s.inference + s.training) if s else []
        return _page(self._checkpoint_index, ckpts, lambda c: (c.created_at, c.id), limit, after,
                     None if type is None else (type,), own, lambda c: type in (None, c.kind)
                     and base_model in (None, ss[c.session_id].base_model),
                     lambda c: wire.checkpoint_bytes(c, ss[c.session_id]))  # fmt: skip

    @locked
    def page_resources(
        self, *, limit: int = 20, after: str | None = None, statuses: Collection[str] | None = None,
        created_by: str | None = None,
    ) -> bytes:  # fmt: skip
        return _page(self._resource_index, self._resources, self._key, limit, after, statuses, None,
                     lambda r: created_by in (None, r.created_by), self._resource_bytes)  # fmt: skip

    @locked
    def chat_model(self, name: str) -> tuple[str, int] | None:
        """``(checkpoint id, step)`` of the inference checkpoint registered under ``name``."""
        if self._chat_names is None:
            self._chat_names = {
                n: ck.id
                for ck in self._checkpoints.values()
                if ck.registered_at is not None and ck.is_inference
                for n in wire.chat_names(ck, self._sessions[ck.session_id])
            }
        cid = self._chat_names.get(name)
        return None if cid is None else (cid, self._checkpoints[cid].step)

    @locked
    def download_files(self, checkpoint_id: str, variant: str | None) -> list[tuple[str, int]]:
        ck = self._checkpoint(checkpoint_id)
        if not variant:
            raise bad_request("variant is required", param="variant", code="missing_parameter")
        if variant not in wire.VARIANT_FILES:
            raise bad_request(f"invalid variant {variant!r}", param="variant")
        if not ck.is_inference:
            raise bad_request("only inference checkpoints can be downloaded", param="checkpoint_id")
        if variant.endswith("ADAPTER") and self._sessions[ck.session_id].lora is None:
            raise bad_request("the adapter variant exists only for LoRA sessions", param="variant")
        return [(name, file_size(ck.id, name)) for name in wire.VARIANT_FILES[variant]]

    @locked
    def set_price(self, base_model: str, price_per_gpu_hour: float) -> None:
        if price_per_gpu_hour < 0:
            raise ValueError("price must be >= 0")
        self._prices[base_model] = float(price_per_gpu_hour)

    @locked
    def price_per_hour(self, base_model: str, *, lora: bool = True, replicas: int = 1) -> float:
        """GPUs (trainer + generators, doubled for full weights) x the price per GPU-hour."""
        listed = wire.MODELS[base_model][3] if base_model in wire.MODELS else 0.0
        per_gpu = self._prices.get(base_model, listed)
        return round(per_gpu * (1 + replicas) * (1 if lora else 2), 2)

    @locked
    def billing(self) -> dict[str, dict[str, Any]]:
        """The spend oracle: per resource, when it was READY and what that cost per hour."""
        now, out = self._now(), {}
        for r in self._resources.values():
            end, price = r.unready_at if r.unready_at is not None else now, self.price_per_hour
            out[r.id] = {
                "status": r.status,
                "ready_at": None if r.ready_at is None else wire.fmt_ts(r.ready_at),
                "unready_at": None if r.unready_at is None else wire.fmt_ts(r.unready_at),
                "billed_seconds": 0.0 if r.ready_at is None else max(0, end - r.ready_at) / US,
                "billing": r.status == wire.RESOURCE_READY,
                "price_per_hour": price(r.base_model, lora=r.lora_enabled, replicas=r.num_generator_replicas),
            }  # fmt: skip
        return out

    @locked
    def billing_resources(self) -> list[str]:
        return [r.id for r in self._resources.values() if r.status == wire.RESOURCE_READY]


def file_size(checkpoint_id: str, filename: str) -> int:
    """Deterministic small size of a simulated file (json ≤ 2 KiB, weights ≤ 64 KiB)."""
    digest = blake2b(f"{checkpoint_id}/{filename}".encode(), digest_size=4).digest()
    h = int.from_bytes(digest, "big")
    return 256 + h % 1792 if filename.endswith(".json") else 4096 + h % 61440


def _page(index: OrderedIndex, items: dict[str, Any], key: Callable[[Any], Key], limit: int,
          after: str | None, parts: Collection[str] | None, own: list[Any] | None,
          keep: Callable[[Any], bool], serialize: Callable[[Any], bytes]) -> bytes:  # fmt: skip
    """One list page: the index's keys (of ``parts``), or a parent's ``own`` items sorted like
    it, descending and strictly below the ``after`` item's key, the ones ``keep`` passes."""
    start = None
    if after:
        if after not in items:
            raise bad_request(f"unknown cursor {after!r}", param="after", code="invalid_cursor")
        start = key(items[after])
    if own is None:
        keys: Iterable[Key] = index.iter_desc(start, parts or None)
    else:
        keys = sorted((k for k in map(key, own) if start is None or k < start), reverse=True)
    picked = list(islice((k for k in keys if keep(items[k[1]])), limit + 1))
    has_more = len(picked) > limit
    del picked[limit:]
    cursor = picked[-1][1] if has_more else ""
    meta = wire.dumps({"limit": limit, "has_more": has_more, "next_cursor": cursor})
    data = b",".join(serialize(items[k[1]]) for k in picked)
    return b'{"data":[' + data + b'],"meta":' + meta + b"}"
