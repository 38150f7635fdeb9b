"""Model-resource administration in the simulated world: the GPU capacity queue, prices,
stop permissions and billing records.

* **Queue.** ``set_gpu_capacity("H100-80GB", 1)`` lets one resource of that GPU type hold GPUs
  (provisioning, READY or STOPPING) at a time; later ones stay PENDING, oldest first, with
  ``status_details.queue_position``, and are admitted when a holder reaches STOPPED or ERROR.
  Unlimited by default (provisioning starts at once, as before).
* **Prices.** ``estimate-cost`` answers from :meth:`price_per_hour`; :meth:`set_price`
  overrides a base model's price per GPU-hour.
* **Permissions.** :meth:`protect_resource` makes ``stop`` answer 403 (a resource the caller
  may not stop).
* **Billing.** The API bills only while READY: :meth:`billing` reports, per resource, when it
  became READY, when it left READY and the seconds billed so far, an oracle for spend tests
  and for "nothing is left billing" assertions.
"""

from __future__ import annotations

from typing import Any

from .constants import (
    PRICE_PER_GPU_HOUR,
    RESOURCE_CREATING,
    RESOURCE_PENDING,
    RESOURCE_READY,
    RESOURCE_STOPPING,
)
from .lifecycle import LifecycleMixin
from .state import US, Resource, locked
from .wire import fmt_ts

_HOLDING = (RESOURCE_CREATING, RESOURCE_READY, RESOURCE_STOPPING)


class ResourceAdminMixin(LifecycleMixin):
    """Capacity queue, prices, stop permissions and billing of model resources."""

    _gpu_capacity: dict[str, int] | None = None
    _prices: dict[str, float] | None = None

    # --- capacity queue ----------------------------------------------------------------------
    @locked
    def set_gpu_capacity(self, gpu_type: str, n: int | None) -> None:
        """At most ``n`` resources of ``gpu_type`` hold GPUs at once (None: unlimited)."""
        caps = dict(self._gpu_capacity or {})
        if n is None:
            caps.pop(gpu_type, None)
        else:
            if n < 0:
                raise ValueError(f"capacity must be >= 0, got {n}")
            caps[gpu_type] = int(n)
        self._gpu_capacity = caps
        self._admit(self._now())

    def _holding(self, gpu_type: str) -> int:
        return sum(
            1
            for r in self._resources.values()
            if r.gpu_type == gpu_type
            and not r.queued
            and (r.status in _HOLDING or r.status == RESOURCE_PENDING)
        )

    def _has_room(self, gpu_type: str) -> bool:
        cap = (self._gpu_capacity or {}).get(gpu_type)
        return cap is None or self._holding(gpu_type) < cap

    def _enqueue(self, r: Resource, at: int) -> None:
        r.queued = True
        r.json = None
        self._admit(at)  # oldest first, so the queue stays first in, first out

    def _admit(self, at: int) -> None:
        waiting = sorted(
            (r for r in self._resources.values() if r.queued and r.status == RESOURCE_PENDING),
            key=lambda r: (r.created_at, r.id),
        )
        for r in waiting:
            if self._has_room(r.gpu_type):
                self._provision(r, at)
                r.json = None

    def _resource_released(self, r: Resource, at: int) -> None:
        self._admit(at)

    @locked
    def queued_resources(self) -> list[str]:
        """Ids of resources waiting for capacity, oldest first."""
        waiting = [r for r in self._resources.values() if r.queued and r.status == RESOURCE_PENDING]
        return [r.id for r in sorted(waiting, key=lambda r: (r.created_at, r.id))]

    # --- prices --------------------------------------------------------------------------------
    @locked
    def set_price(self, base_model: str, price_per_gpu_hour: float) -> None:
        """Override the price per GPU-hour of ``base_model`` (estimate-cost reads it)."""
        if price_per_gpu_hour < 0:
            raise ValueError("price must be >= 0")
        self._prices = {**(self._prices or {}), base_model: float(price_per_gpu_hour)}

    @locked
    def price_per_hour(self, base_model: str, *, lora: bool = True, replicas: int = 1) -> float:
        """What ``estimate-cost`` answers: GPUs (trainer + generators, doubled for full-weight
        training) x the base model's price per GPU-hour."""
        per_gpu = (self._prices or {}).get(base_model, PRICE_PER_GPU_HOUR.get(base_model, 0.0))
        gpus = (1 + replicas) * (1 if lora else 2)
        return round(per_gpu * gpus, 2)

    # --- permissions ---------------------------------------------------------------------------
    @locked
    def protect_resource(self, resource_id: str, protected: bool = True) -> None:
        """Make ``POST …/stop`` on this resource answer 403 (or allow it again)."""
        self._resource(resource_id).protected = protected

    # --- billing -------------------------------------------------------------------------------
    def _billed_us(self, r: Resource, now: int) -> int:
        if r.ready_at is None:
            return 0
        end = r.unready_at if r.unready_at is not None else now
        return max(0, end - r.ready_at)

    @locked
    def billing(self) -> dict[str, dict[str, Any]]:
        """Per resource: ``ready_at``/``unready_at`` (wire timestamps or None), ``billed_seconds``,
        ``billing`` (READY right now) and ``price_per_hour`` for its configuration."""
        now = self._now()
        out: dict[str, dict[str, Any]] = {}
        for r in self._resources.values():
            out[r.id] = {
                "status": r.status,
                "ready_at": fmt_ts(r.ready_at) if r.ready_at is not None else None,
                "unready_at": fmt_ts(r.unready_at) if r.unready_at is not None else None,
                "billed_seconds": self._billed_us(r, now) / US,
                "billing": r.status == RESOURCE_READY,
                "price_per_hour": self.price_per_hour(
                    r.base_model, lora=r.lora_enabled, replicas=r.num_generator_replicas
                ),
            }
        return out

    @locked
    def billing_resources(self) -> list[str]:
        """Ids of resources billing right now (READY)."""
        return [r.id for r in self._resources.values() if r.status == RESOURCE_READY]
