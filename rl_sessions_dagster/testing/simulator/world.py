"""``SimulatedWorld``: the in-memory Together RL account behind the simulator, usable on its
own. This module holds its settings, clock, list order, reads, prices and billing."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime
from hashlib import blake2b
from itertools import islice
from typing import Any

from . import wire
from .lifecycle import ListOrder, check_list_order, locked, session_status
from .populate import populate_world
from .sessions import Sessions
from .state import ClockMode, Key, Resource, SimClock
from .wire import US, bad_request

Pred = Callable[[Key], bool]


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
        start, sessions = _after(after, self._sessions, self._key), self._sessions
        preds: list[Pred] = []
        if resource_id is not None:
            r = self._resources.get(resource_id)
            it = _below((self._key(sessions[i]) for i in (r.session_ids if r else [])), start)
            if statuses:
                preds.append(lambda k: sessions[k[1]].status in statuses)
        else:
            it = self._session_index.iter_desc(start, statuses or None)
        if created_by is not None:
            preds.append(lambda k: sessions[k[1]].created_by == created_by)
        return _page(it, limit, preds, lambda i: wire.session_bytes(sessions[i]))

    @locked
    def page_checkpoints(
        self, *, limit: int = 20, after: str | None = None, session_id: str | None = None,
        type: str | None = None, base_model: str | None = None,
    ) -> bytes:  # fmt: skip
        ckpts, sessions = self._checkpoints, self._sessions
        start = _after(after, ckpts, lambda c: (c.created_at, c.id))
        preds: list[Pred] = []
        if session_id is not None:
            own = (s.inference + s.training) if (s := sessions.get(session_id)) else []
            it = _below(((c.created_at, c.id) for c in own), start)
            if type is not None:
                preds.append(lambda k: ckpts[k[1]].kind == type)
        else:
            it = self._checkpoint_index.iter_desc(start, None if type is None else (type,))
        if base_model is not None:
            preds.append(lambda k: sessions[ckpts[k[1]].session_id].base_model == base_model)

        def serialize(i: str) -> bytes:
            return wire.checkpoint_bytes(ckpts[i], sessions[ckpts[i].session_id])

        return _page(it, limit, preds, serialize)

    @locked
    def page_resources(
        self, *, limit: int = 20, after: str | None = None, statuses: Collection[str] | None = None,
        created_by: str | None = None,
    ) -> bytes:  # fmt: skip
        resources = self._resources
        it = self._resource_index.iter_desc(_after(after, resources, self._key), statuses or None)
        preds: list[Pred] = []
        if created_by is not None:
            preds.append(lambda k: resources[k[1]].created_by == created_by)
        return _page(it, limit, preds, lambda i: self._resource_bytes(resources[i]))

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


def _after(after: str | None, items: dict[str, Any], key: Callable[[Any], Key]) -> Key | None:
    if not after:
        return None
    if after not in items:
        raise bad_request(f"unknown cursor {after!r}", param="after", code="invalid_cursor")
    return key(items[after])


def _below(keys: Iterable[Key], start: Key | None) -> Iterator[Key]:
    """A parent's own items, listed like an index: descending, strictly below ``start``."""
    return iter(sorted((k for k in keys if start is None or k < start), reverse=True))


def _page(keys: Iterator[Key], limit: int, preds: list[Pred],
          serialize: Callable[[str], bytes]) -> bytes:  # fmt: skip
    it = filter(lambda k: all(p(k) for p in preds), keys) if preds else keys
    picked = list(islice(it, limit + 1))
    has_more = len(picked) > limit
    del picked[limit:]
    cursor = picked[-1][1] if has_more else ""
    meta = wire.dumps({"limit": limit, "has_more": has_more, "next_cursor": cursor})
    return b'{"data":[' + b",".join(serialize(k[1]) for k in picked) + b'],"meta":' + meta + b"}"
