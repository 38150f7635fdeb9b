"""Lifecycle of model resources: create, provision, become READY, stop, expire, fail.

The session half and the timer dispatch are in :mod:`.lifecycle`.

Timers (start delay, stop delay, provisioning, inactivity expiry, registration lag) sit in a
heap and are applied lazily, in time order, whenever the world is read or changed; a transition
is stamped with the time it was due, not the time somebody happened to look.
"""

from __future__ import annotations

from typing import Any

from .checkpoints import CheckpointsMixin
from .constants import (
    DEFAULT_BASE_MODEL,
    RESOURCE_CREATING,
    RESOURCE_ERROR,
    RESOURCE_ERROR_PROVISIONING_FAILED,
    RESOURCE_PENDING,
    RESOURCE_READY,
    RESOURCE_STOPPED,
    RESOURCE_STOPPING,
    SESSION_ERROR_RESOURCE_UNAVAILABLE,
    SESSION_EXPIRED,
    resource_status,
)
from .errors import SimulatorError, bad_request
from .state import US, Resource, Session, StopRequest, locked

DEFAULT_LORA_CONFIG: dict[str, Any] = {
    "rank": 32,
    "alpha": 64,
    "dropout": 0.0,
    "train_unembed": True,
}


class ResourceLifecycleMixin(CheckpointsMixin):
    """Create and move model resources through their lifecycle."""

    # settings (assigned in SimulatedWorld.__init__)
    resource_provision_delay: float
    resource_stop_delay: float

    # a resource that stops or fails takes its sessions along (provided by LifecycleMixin)
    def _stop(self, s: Session, at: int, *, immediate: bool) -> None:
        raise NotImplementedError

    def _fail(self, s: Session, code: str | None, message: str | None, at: int) -> None:
        raise NotImplementedError

    # --- model resources -------------------------------------------------------------------
    @locked
    def create_model_resource(
        self,
        base_model: str = DEFAULT_BASE_MODEL,
        *,
        lora: bool = True,
        inactive_timeout: int = 3600,
        status: str = "READY",
        created_by: str | None = None,
        num_generator_replicas: int = 1,
        base_weights_ref: str | None = None,
        optimizer: dict[str, Any] | None = None,
        gpu_type: str = "B200-SXM",
    ) -> str:
        """Add a model resource; ``status="PENDING"`` provisions it (``resource_provision_delay``)
        once GPU capacity allows (see ``set_gpu_capacity``; unlimited by default).

        Any other status (short or full name, or a raw string) is set as-is, READY by default so
        sessions can attach right away.
        """
        now = self._now()
        status = resource_status(status)
        r = Resource(
            id=self._new_id(),
            base_model=base_model,
            lora_enabled=lora,
            inactive_timeout=int(inactive_timeout),
            status=status,
            created_at=now,
            updated_at=now,
            created_by=created_by or self.user_id,
            num_generator_replicas=num_generator_replicas,
            base_weights_ref=base_weights_ref,
            optimizer=optimizer or {"adam": {}},
            gpu_type=gpu_type,
        )
        self._add_resource_record(r)
        if status == RESOURCE_PENDING:
            self._enqueue(r, now)
        elif status == RESOURCE_READY:
            self._become_ready(r, now)
        return r.id

    def _provision(self, r: Resource, at: int) -> None:
        """Start provisioning a PENDING resource: CREATING halfway, READY at the end."""
        r.queued = False
        delay = round(self.resource_provision_delay * US)
        self._schedule(at + delay // 2, "resource_creating", r.id)
        self._schedule(at + delay, "resource_ready", r.id)

    def _enqueue(self, r: Resource, at: int) -> None:
        self._provision(r, at)  # capacity-aware override in resources.py

    def _become_ready(self, r: Resource, at: int) -> None:
        self._set_resource_status(r, RESOURCE_READY, at)
        if r.ready_at is None:  # created READY: no status change marked the start of billing
            r.ready_at = at
        self._record_activity(r, at)
        self._schedule(r.stop_due() or at, "resource_expiry", r.id)

    @locked
    def stop_model_resource(self, resource_id: str, *, force: bool = False) -> None:
        """Stop a resource as ``POST …/stop`` does: 400 if already stopped or, without ``force``,
        while sessions are active; a forced stop also stops every attached session."""
        r = self._resource(resource_id)
        now = self._now()
        active = self._active_sessions(r)
        gone = r.status in (RESOURCE_STOPPING, RESOURCE_STOPPED, RESOURCE_ERROR)
        accepted = not r.protected and not gone and (force or not active)
        sessions = tuple(
            (s.id, s.status, s.created_at, s.updated_at)
            for s in (self._sessions[sid] for sid in r.session_ids)
        )
        self._stop_requests.append(
            StopRequest(r.id, now, r.status, force, accepted, sessions, r.ready_at)
        )
        if r.protected:
            raise SimulatorError(
                403, f"not allowed to stop model resource {r.id}", code="permission_denied"
            )
        if gone:
            raise bad_request(f"model resource {r.id} is already {r.status}", code="not_active")
        if active and not force:
            raise bad_request(
                f"model resource {r.id} has {len(active)} active session(s); pass force=true",
                param="force",
                code="sessions_active",
            )
        for s in active:
            self._stop(s, now, immediate=False)
        self._set_resource_status(r, RESOURCE_STOPPING, now)
        self._schedule(now + round(self.resource_stop_delay * US), "resource_stop", r.id)

    @locked
    def stop_requests(self) -> list[StopRequest]:
        """Every stop asked of the world (refused ones too), with the resource's sessions at
        that instant: lets a test check that nothing in use was ever asked to stop."""
        return list(self._stop_requests)

    @locked
    def extend_expiry(self, resource_id: str, seconds: float) -> None:
        """Keep a READY resource up for at least ``seconds`` from now (400 if not READY)."""
        r = self._resource(resource_id)
        if r.status != RESOURCE_READY:
            raise bad_request(f"model resource {r.id} is {r.status}, not READY", code="not_ready")
        r.expiry_floor = max(r.expiry_floor, self._now() + round(seconds * US))
        r.json = None

    @locked
    def expire_resource(self, resource_id: str) -> None:
        """Stop the resource for inactivity right now: it goes STOPPED, its sessions EXPIRED."""
        self._expire(self._resource(resource_id), self._now())

    def _expire(self, r: Resource, at: int) -> None:
        # Every non-terminal session expires with its resource, STOPPING ones included.
        for s in self._active_sessions(r):
            self._set_session_status(s, SESSION_EXPIRED, at)
        self._set_resource_status(r, RESOURCE_STOPPED, at)

    @locked
    def fail_model_resource(
        self,
        resource_id: str,
        *,
        code: str = RESOURCE_ERROR_PROVISIONING_FAILED,
        message: str = "The model resource failed.",
    ) -> None:
        """Put a resource in ERROR; its active sessions go ERROR/RESOURCE_UNAVAILABLE (a guess:
        the real behaviour is undocumented)."""
        r = self._resource(resource_id)
        now = self._now()
        for s in self._active_sessions(r):
            self._fail(s, SESSION_ERROR_RESOURCE_UNAVAILABLE, None, now)
        r.error = (code, message, now)
        self._set_resource_status(r, RESOURCE_ERROR, now)

    def _on_resource_timer(self, kind: str, target: str, due: int, now: int) -> None:
        r = self._resources[target]
        if kind == "resource_creating" and r.status == RESOURCE_PENDING:
            self._set_resource_status(r, RESOURCE_CREATING, due)
        elif kind == "resource_ready" and r.status in (RESOURCE_PENDING, RESOURCE_CREATING):
            self._become_ready(r, due)
        elif kind == "resource_stop" and r.status == RESOURCE_STOPPING:
            self._set_resource_status(r, RESOURCE_STOPPED, due)
        elif kind == "resource_expiry" and r.status == RESOURCE_READY:
            expires = r.stop_due() or due
            if expires > now:
                self._schedule(expires, "resource_expiry", r.id)
            else:
                self._expire(r, expires)
