"""``SimulatedWorld``: the in-memory Together RL service state behind the simulator.

The world is usable on its own (no HTTP) and is what ``RLSimulator`` serves. Its public
methods are spread over small mixins, one concept each:

* ``lifecycle.py`` — create/start/stop/fail/expire resources and sessions, checkpoints,
  registration lag, forced raw statuses, drift mutations;
* ``operations.py`` — the seven operation kinds, idempotency, injected operation failures;
* ``queries.py`` — wire JSON getters and keyset pages;
* ``resources.py`` — the GPU capacity queue, prices, stop permissions, billing records;
* this module — construction, settings, clock, list order, bulk population.

Every public method takes the world's single re-entrant lock and first applies due timers, so
the world is safe to drive from a test thread while server threads serve it.
"""

from __future__ import annotations

import gc
from datetime import datetime
from typing import Any

from .clock import ClockMode, SimClock
from .operations import OperationsMixin
from .queries import QueriesMixin
from .resources import ResourceAdminMixin
from .state import LIST_ORDERS, US, ListOrder, locked


class SimulatedWorld(QueriesMixin, ResourceAdminMixin, OperationsMixin):
    """Thread-safe in-memory state of a simulated Together RL account.

    Args:
        seed: seeds every id and random choice, so the same calls give the same world.
        clock: ``"real"`` (UTC now plus :meth:`advance_clock` offsets) or ``"manual"``
            (frozen at ``start``, moved only by :meth:`advance_clock`).
        start: start of a manual clock (default 2026-11-29T12:00:00Z).
        user_id: the API key's user: default ``created_by`` and what ``created_by=me`` means.
        list_order: ``"newest_first"`` (created_at desc, id desc) or ``"unordered"`` (a stable
            order unrelated to time) for session and model-resource lists.
        session_start_delay / session_stop_delay: seconds an HTTP-created session stays
            CREATING / a stopped session stays STOPPING.
        resource_provision_delay / resource_stop_delay: seconds PENDING+CREATING / STOPPING
            last for resources that go through those states.
        operation_polls: GETs after which an operation completes (0 = completed on submit);
            ``operation_polls_by_kind`` overrides it per kind.
        registration_delay: seconds between an operation-created checkpoint and its registration.
        default_registration_shape / default_int64_as_string: wire quirks of new sessions.
        expiry_refresh: seconds between refreshes of a READY resource's shown ``expires_at``
            (the API refreshes it about once a minute; the real stop uses the true activity).

    Attributes:
        response_hook: ``callable(path, payload) -> payload`` applied by the server to every
            decoded ``/v1`` JSON response before it is sent (bypasses nothing in the world; the
            server re-encodes only while a hook is set). For drift tests.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: ClockMode = "real",
        start: datetime | None = None,
        user_id: str = "user_sim",
        list_order: ListOrder = "newest_first",
        session_start_delay: float = 0.0,
        session_stop_delay: float = 0.0,
        resource_provision_delay: float = 0.0,
        resource_stop_delay: float = 0.0,
        operation_polls: int = 1,
        operation_polls_by_kind: dict[str, int] | None = None,
        registration_delay: float = 0.0,
        default_registration_shape: str | None = "current",
        default_int64_as_string: bool = False,
        expiry_refresh: float = 60.0,
    ) -> None:
        if list_order not in LIST_ORDERS:
            raise ValueError(
                f"list_order must be one of {', '.join(LIST_ORDERS)}, not {list_order!r}"
            )
        super().__init__(
            seed=seed, clock=SimClock(clock, start), user_id=user_id, list_order=list_order
        )
        self.session_start_delay = session_start_delay
        self.session_stop_delay = session_stop_delay
        self.resource_provision_delay = resource_provision_delay
        self.resource_stop_delay = resource_stop_delay
        self.operation_polls = operation_polls
        self.operation_polls_by_kind = dict(operation_polls_by_kind or {})
        self.registration_delay = registration_delay
        self.default_registration_shape = default_registration_shape
        self.default_int64_as_string = default_int64_as_string
        self.expiry_refresh_us = round(expiry_refresh * US)
        self._fail_next_creates = []
        self._fail_next_ops = []

    # --- clock -----------------------------------------------------------------------------
    @locked
    def now(self) -> datetime:
        """The world's current time (aware UTC)."""
        return self.clock.now()

    def advance_clock(self, seconds: float) -> None:
        """Move simulated time forward and apply every timer that became due (expiry, delays)."""
        with self._lock:
            self.clock.advance(seconds)
            self._tick()

    # --- list order ------------------------------------------------------------------------
    @property
    def list_order(self) -> ListOrder:
        """Current order of session and model-resource lists."""
        return self._list_order

    @locked
    def set_list_order(self, order: ListOrder) -> None:
        """Switch between ``"newest_first"``, ``"oldest_first"`` and ``"unordered"`` (an order
        unrelated to time); rebuilds the indices."""
        if order not in LIST_ORDERS:
            raise ValueError(f"order must be one of {', '.join(LIST_ORDERS)}, not {order!r}")
        if order != self._list_order:
            self._list_order = order
            self._rebuild_indices()

    # --- bulk ------------------------------------------------------------------------------
    @locked
    def populate(
        self,
        n_sessions: int = 10_000,
        checkpoints_per_session: int = 10,
        active: int = 50,
        *,
        seed: int | None = None,
        days: float = 28.0,
        training_checkpoints_per_session: int = 1,
        registration_shapes: tuple[str | None, ...] = ("current",),
        base_models: tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        """Bulk-create a realistic history; see :func:`populate.populate_world`. Returns counts
        and the elapsed seconds."""
        from .populate import populate_world

        # Millions of new containers would trigger many full GC passes; none can be garbage.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return populate_world(
                self,
                n_sessions=n_sessions,
                checkpoints_per_session=checkpoints_per_session,
                active=active,
                seed=self.seed if seed is None else seed,
                days=days,
                training_checkpoints_per_session=training_checkpoints_per_session,
                registration_shapes=registration_shapes,
                base_models=base_models,
            )
        finally:
            if was_enabled:
                gc.enable()
