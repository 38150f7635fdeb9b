"""Lifecycle of resources and sessions: the world's control API and its timers.

Timers (start delay, stop delay, provisioning, inactivity expiry, registration lag) sit in a
heap and are applied lazily, in time order, whenever the world is read or changed; a transition
is stamped with the time it was due, not the time somebody happened to look.
"""

from __future__ import annotations

from typing import Any

from .checkpoints import DEFAULT, CheckpointsMixin
from .constants import (
    DEFAULT_BASE_MODEL,
    NO_REGISTRY_MODELS,
    REGISTRATION_SHAPES,
    RESOURCE_CREATING,
    RESOURCE_ERROR,
    RESOURCE_ERROR_PROVISIONING_FAILED,
    RESOURCE_PENDING,
    RESOURCE_READY,
    RESOURCE_STOPPED,
    RESOURCE_STOPPING,
    SESSION_CREATING,
    SESSION_ERROR,
    SESSION_ERROR_MESSAGES,
    SESSION_ERROR_RESOURCE_AT_CAPACITY,
    SESSION_ERROR_RESOURCE_UNAVAILABLE,
    SESSION_ERROR_SESSION_FAILED,
    SESSION_EXPIRED,
    SESSION_RUNNING,
    SESSION_STOPPED,
    SESSION_STOPPING,
    SESSION_TERMINAL,
    resource_status,
    session_status,
)
from .errors import SimulatorError, bad_request
from .state import US, Resource, Session, StopRequest, locked

DEFAULT_LORA_CONFIG: dict[str, Any] = {
    "rank": 32,
    "alpha": 64,
    "dropout": 0.0,
    "train_unembed": True,
}


class LifecycleMixin(CheckpointsMixin):
    """Create and move resources, sessions and checkpoints through their lifecycles."""

    # settings (assigned in SimulatedWorld.__init__)
    session_start_delay: float
    session_stop_delay: float
    resource_provision_delay: float
    resource_stop_delay: float
    default_registration_shape: str | None
    default_int64_as_string: bool
    _fail_next_creates: list[tuple[str, str]]

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

    # --- sessions --------------------------------------------------------------------------
    @locked
    def create_session(
        self,
        resource_id: str | None = None,
        *,
        display_name: str | None = None,
        wandb: dict[str, str] | None = None,
        created_by: str | None = None,
        registration_shape: str | None = DEFAULT,
        int64_as_string: bool | None = None,
        status: str = "RUNNING",
        fail_at_creation: bool = False,
        base_model: str = DEFAULT_BASE_MODEL,
        lora: bool = True,
        lora_config: dict[str, Any] | None = None,
    ) -> str:
        """Add a session; ``resource_id=None`` first creates a READY ``base_model``/``lora`` resource.

        ``status="RUNNING"`` starts it at once; ``"CREATING"`` leaves it waiting for
        :meth:`start_session`. ``fail_at_creation`` makes the start fail with RESOURCE_AT_CAPACITY
        (immediately unless the session is left CREATING). Raises :class:`SimulatorError` 429 if
        the resource is full and 400 if it is not READY, like the HTTP endpoint.
        """
        if resource_id is None:
            resource_id = self.create_model_resource(base_model, lora=lora)
        r = self._resource(resource_id)
        fail = SESSION_ERROR_RESOURCE_AT_CAPACITY if fail_at_creation else None
        s = self._new_session(
            r,
            display_name=display_name,
            wandb=wandb,
            created_by=created_by,
            shape=registration_shape,
            int64_as_string=int64_as_string,
            lora_config=lora_config,
            fail_code=fail,
        )
        if session_status(status) != SESSION_CREATING:
            self._start(s, self._now())
        return s.id

    @locked
    def request_session(
        self,
        resource_id: str,
        *,
        display_name: str | None = None,
        wandb: dict[str, str] | None = None,
        lora_config: dict[str, Any] | None = None,
        resume_from_checkpoint_id: str | None = None,
        load_optimizer: bool = True,
    ) -> str:
        """What ``POST /v1/rl/training-sessions`` does: a CREATING session that starts (or fails,
        see :meth:`fail_next_session_creates`) after ``session_start_delay`` seconds."""
        r = self._resource(resource_id)
        step = 0
        if resume_from_checkpoint_id is not None:
            ck = self._checkpoints.get(resume_from_checkpoint_id)
            if ck is None or ck.is_inference:
                raise bad_request(
                    "resume_from_checkpoint_id must name a training checkpoint",
                    "resume_from_checkpoint_id",
                )
            if self._sessions[ck.session_id].base_model != r.base_model:
                raise bad_request("checkpoint base model differs", "resume_from_checkpoint_id")
            step = ck.step if load_optimizer else 0
        fail = self._fail_next_creates[0] if self._fail_next_creates else (None, None)
        s = self._new_session(
            r,
            display_name=display_name,
            wandb=wandb,
            lora_config=lora_config,
            resume_from=resume_from_checkpoint_id,
            step=step,
            fail_code=fail[0],
            fail_message=fail[1],
        )
        if fail[0] is not None:
            del self._fail_next_creates[0]
        self._schedule(s.created_at + round(self.session_start_delay * US), "session_start", s.id)
        return s.id

    def _new_session(
        self,
        r: Resource,
        *,
        display_name: str | None = None,
        wandb: dict[str, str] | None = None,
        created_by: str | None = None,
        shape: str | None = DEFAULT,
        int64_as_string: bool | None = None,
        lora_config: dict[str, Any] | None = None,
        fail_code: str | None = None,
        fail_message: str | None = None,
        resume_from: str | None = None,
        step: int = 0,
    ) -> Session:
        """Validate capacity and add a CREATING session (callers start it or schedule the start)."""
        if r.status != RESOURCE_READY:
            raise bad_request(
                f"model resource {r.id} is {r.status}, not READY", "model_resources_id"
            )
        if len(self._active_sessions(r)) >= r.cap:
            raise SimulatorError(
                429,
                f"model resource {r.id} already hosts its maximum of {r.cap} concurrent session(s)",
                param="model_resources_id",
                code="resource_at_capacity",
            )
        if shape == DEFAULT:
            shape = None if r.base_model in NO_REGISTRY_MODELS else self.default_registration_shape
        if shape not in REGISTRATION_SHAPES:
            raise ValueError(
                f"registration_shape must be one of {REGISTRATION_SHAPES}, not {shape!r}"
            )
        lora = None
        if r.lora_enabled:
            lora = {**DEFAULT_LORA_CONFIG, **(lora_config or {})}
        now = self._now()
        s = Session(
            id=self._new_id(),
            resource_id=r.id,
            base_model=r.base_model,
            status=SESSION_CREATING,
            created_at=now,
            updated_at=now,
            created_by=created_by or self.user_id,
            shape=shape,
            int64_as_string=(
                self.default_int64_as_string if int64_as_string is None else int64_as_string
            ),
            adapter=r.lora_enabled and r.base_weights_ref is None,
            display_name=display_name,
            wandb=dict(wandb) if wandb else None,
            lora=lora,
            step=step,
            trainer_step=step,
            resume_from=resume_from,
            fail_code=fail_code,
            fail_message=fail_message,
        )
        self._add_session_record(s)
        return s

    def _start(self, s: Session, at: int) -> None:
        """CREATING → RUNNING (activity on the resource), or → ERROR if set to fail at creation."""
        if s.fail_code is not None:
            self._fail(s, s.fail_code, s.fail_message, at)
            return
        self._set_session_status(s, SESSION_RUNNING, at)
        r = self._resources[s.resource_id]
        self._record_activity(r, at)

    @locked
    def start_session(self, session_id: str) -> None:
        """Finish a CREATING session's start now (RUNNING, or ERROR if set to fail)."""
        s = self._session(session_id)
        if s.status != SESSION_CREATING:
            raise bad_request(f"session {s.id} is {s.status}, not CREATING")
        self._start(s, self._now())

    @locked
    def stop_session(self, session_id: str, *, immediate: bool = False) -> None:
        """Stop a session: STOPPING, then STOPPED after ``session_stop_delay`` (or at once)."""
        self._stop(self._session(session_id), self._now(), immediate=immediate)

    def _stop(self, s: Session, at: int, *, immediate: bool) -> None:
        if s.status in SESSION_TERMINAL:
            return
        if immediate:
            self._set_session_status(s, SESSION_STOPPED, at)
            return
        if s.status != SESSION_STOPPING:
            self._set_session_status(s, SESSION_STOPPING, at)
            self._schedule(at + round(self.session_stop_delay * US), "session_stop", s.id)

    @locked
    def fail_session(
        self,
        session_id: str,
        *,
        code: str | None = SESSION_ERROR_SESSION_FAILED,
        message: str | None = None,
    ) -> None:
        """Move a session to ERROR with ``error{code, message, occurred_at}`` (``code=None`` omits
        the code, as older payloads did)."""
        self._fail(self._session(session_id), code, message, self._now())

    def _fail(self, s: Session, code: str | None, message: str | None, at: int) -> None:
        if message is None:
            message = SESSION_ERROR_MESSAGES.get(code or "", "The training session failed.")
        s.error = (code, message, at)
        self._set_session_status(s, SESSION_ERROR, at)

    @locked
    def fail_next_session_creates(
        self,
        n: int = 1,
        *,
        code: str = SESSION_ERROR_RESOURCE_AT_CAPACITY,
        message: str | None = None,
    ) -> None:
        """Make the next ``n`` HTTP-created sessions go CREATING → ERROR instead of RUNNING."""
        msg = message or SESSION_ERROR_MESSAGES.get(code, "The session could not start.")
        self._fail_next_creates.extend([(code, msg)] * n)

    @locked
    def set_status(self, ident: str, status: str) -> None:
        """Force any status string on a session or resource (short names are expanded; unknown
        strings like ``TRAINING_SESSION_STATUS_PAUSED`` are stored raw, for drift tests)."""
        now = self._now()
        if ident in self._sessions:
            self._set_session_status(self._sessions[ident], session_status(status), now)
        else:
            self._set_resource_status(self._resource(ident, None), resource_status(status), now)

    @locked
    def advance_steps(self, session_id: str, n: int = 1) -> int:
        """Add ``n`` optimizer steps to a session; returns the new step."""
        s = self._session(session_id)
        s.step += n
        s.trainer_step = s.step
        self._touch_session(s, self._now())
        return s.step

    @locked
    def patch_session(
        self,
        session_id: str,
        *,
        display_name: str | None = None,
        wandb: dict[str, str] | None = None,
    ) -> None:
        """PATCH semantics: None leaves a field unchanged, ``""`` clears it."""
        s = self._session(session_id)
        if display_name is not None:
            s.display_name = display_name or None
        if wandb is not None:
            merged = dict(s.wandb or {})
            for k, v in wandb.items():
                if v == "":
                    merged.pop(k, None)
                else:
                    merged[k] = v
            s.wandb = merged or None
        self._touch_session(s, self._now())

    @locked
    def mutate_session_json(
        self, session_id: str, *, drop: tuple[str, ...] = (), extra: dict[str, Any] | None = None
    ) -> None:
        """Drift testing: drop top-level keys from / add keys to this session's JSON (cached)."""
        s = self._session(session_id)
        s.drop_fields = tuple(drop)
        s.extra_fields = dict(extra) if extra else None
        s.json = None

    # --- timers ----------------------------------------------------------------------------
    def _on_timer(self, kind: str, target: str, due: int, now: int) -> None:
        if kind in ("session_start", "session_stop"):
            s = self._sessions[target]
            if kind == "session_start" and s.status == SESSION_CREATING:
                self._start(s, due)
            elif kind == "session_stop" and s.status == SESSION_STOPPING:
                self._set_session_status(s, SESSION_STOPPED, due)
        elif kind == "register":
            self._register(self._checkpoints[target], due)
        else:
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
