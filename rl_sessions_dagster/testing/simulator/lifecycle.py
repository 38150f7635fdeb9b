"""Lifecycle of resources and sessions: the world's control API and its timers.

Timers (start delay, stop delay, provisioning, inactivity expiry, registration lag) sit in a
heap and are applied lazily, in time order, whenever the world is read or changed; a transition
is stamped with the time it was due, not the time somebody happened to look.
"""

from __future__ import annotations

from typing import Any

from .checkpoints import DEFAULT
from .constants import (
    DEFAULT_BASE_MODEL,
    NO_REGISTRY_MODELS,
    REGISTRATION_SHAPES,
    RESOURCE_READY,
    SESSION_CREATING,
    SESSION_ERROR,
    SESSION_ERROR_MESSAGES,
    SESSION_ERROR_RESOURCE_AT_CAPACITY,
    SESSION_ERROR_SESSION_FAILED,
    SESSION_RUNNING,
    SESSION_STOPPED,
    SESSION_STOPPING,
    SESSION_TERMINAL,
    resource_status,
    session_status,
)
from .errors import SimulatorError, bad_request
from .resource_lifecycle import ResourceLifecycleMixin
from .state import US, Resource, Session, locked

DEFAULT_LORA_CONFIG: dict[str, Any] = {
    "rank": 32,
    "alpha": 64,
    "dropout": 0.0,
    "train_unembed": True,
}


class LifecycleMixin(ResourceLifecycleMixin):
    """Create and move sessions and checkpoints through their lifecycles (resources: the base)."""

    # settings (assigned in SimulatedWorld.__init__)
    session_start_delay: float
    session_stop_delay: float
    resource_provision_delay: float
    resource_stop_delay: float
    default_registration_shape: str | None
    default_int64_as_string: bool
    _fail_next_creates: list[tuple[str, str]]

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
            self._on_resource_timer(kind, target, due, now)
