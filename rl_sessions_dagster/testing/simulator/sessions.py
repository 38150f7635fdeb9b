"""Sessions, checkpoints and the async operations. An operation applies its effect only when it
completes, on its ``operation_polls``-th GET; a repeated (session, kind, Idempotency-Key)
returns the original operation."""

from __future__ import annotations

import math
import random
from typing import Any

from . import wire
from .lifecycle import DEFAULT, DEFAULT_LORA_CONFIG, Lifecycle, get_or_404, locked, session_status
from .state import Checkpoint, Operation, Resource, Session
from .wire import US, SimulatorError, bad_request, not_found

OP_PENDING, OP_RUNNING, OP_COMPLETED, OP_FAILED = (
    f"TRAINING_OPERATION_STATUS_{s}" for s in ("PENDING", "RUNNING", "COMPLETED", "FAILED")
)


class Sessions(Lifecycle):
    """Sessions on resources, checkpoints, operations (each submission is activity)."""

    operation_polls: int

    @locked
    def create_session(
        self, resource_id: str | None = None, *, display_name: str | None = None,
        wandb: dict[str, str] | None = None, created_by: str | None = None,
        registration_shape: str | None = DEFAULT, int64_as_string: bool = False,
        status: str = "RUNNING", fail_at_creation: bool = False,
        base_model: str = wire.DEFAULT_BASE_MODEL, lora: bool = True,
        lora_config: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        """A session RUNNING at once (``status="CREATING"``: at :meth:`start_session`), on a new
        resource unless one is given; ``fail_at_creation``: the start fails AT_CAPACITY."""
        r = self._resource(resource_id or self.create_model_resource(base_model, lora=lora))
        s = self._new_session(r, lora_config, registration_shape, display_name=display_name,
                              wandb=wandb, created_by=created_by or self.user_id,
                              int64_as_string=int64_as_string,
                              fail_with=(wire.AT_CAPACITY, None) if fail_at_creation else None)  # fmt: skip
        if session_status(status) != wire.SESSION_CREATING:
            self._start(s, self._now())
        return s.id

    @locked
    def request_session(
        self, resource_id: str, *, display_name: str | None = None, wandb: dict[str, str] | None = None,
        lora_config: dict[str, Any] | None = None, resume_from_checkpoint_id: str | None = None,
        load_optimizer: bool = True,
    ) -> str:  # fmt: skip
        """``POST /v1/rl/training-sessions``: CREATING for ``session_start_delay`` seconds."""
        r, step, resume = self._resource(resource_id), 0, resume_from_checkpoint_id
        if resume is not None:
            ck = self._checkpoints.get(resume)
            if ck is None or ck.is_inference:
                raise bad_request("resume_from_checkpoint_id must name a training checkpoint",
                                  "resume_from_checkpoint_id")  # fmt: skip
            if self._sessions[ck.session_id].base_model != r.base_model:
                raise bad_request("checkpoint base model differs", "resume_from_checkpoint_id")
            step = ck.step if load_optimizer else 0
        fail = self._fail_next_creates[0] if self._fail_next_creates else None
        s = self._new_session(r, lora_config, DEFAULT, display_name=display_name, wandb=wandb,
                              resume_from=resume, step=step, trainer_step=step, fail_with=fail)  # fmt: skip
        if fail is not None:  # consumed only by a create that happened
            del self._fail_next_creates[0]
        start = s.created_at + round(self.session_start_delay * US)
        self._later(start, s, (wire.SESSION_CREATING,), lambda t: self._start(s, t))
        return s.id

    def _new_session(self, r: Resource, lora_config: dict[str, Any] | None, shape: str | None,
                     **fields: Any) -> Session:  # fmt: skip
        param = "model_resources_id"
        if r.status != wire.RESOURCE_READY:
            raise bad_request(f"model resource {r.id} is {r.status}, not READY", param)
        if len(self._active_sessions(r)) >= r.cap:
            message = f"model resource {r.id} already hosts its maximum of {r.cap} concurrent session(s)"  # fmt: skip
            raise SimulatorError(429, message, param=param, code="resource_at_capacity")
        if shape == DEFAULT:
            shape = None if r.base_model in wire.NO_REGISTRY_MODELS else "current"
        wire.check_shape(shape)
        fields.setdefault("created_by", self.user_id)
        fields["wandb"] = dict(fields["wandb"]) if fields.get("wandb") else None
        lora = {**DEFAULT_LORA_CONFIG, **(lora_config or {})} if r.lora_enabled else None
        now = self._now()
        s = Session(self._new_id(), r.id, r.base_model, wire.SESSION_CREATING, now, now, shape=shape,
                    adapter=r.lora_enabled and r.base_weights_ref is None, lora=lora, **fields)  # fmt: skip
        self._sessions[s.id] = s
        self._session_index.add(self._key(s), s.status)
        r.session_ids.append(s.id)
        return s

    def _start(self, s: Session, at: int) -> None:
        if s.fail_with is not None:
            self._fail(s, *s.fail_with, at)
        else:
            self._set_session_status(s, wire.SESSION_RUNNING, at)
            self._record_activity(self._resources[s.resource_id], at)

    @locked
    def start_session(self, session_id: str) -> None:
        s = self._session(session_id)
        if s.status != wire.SESSION_CREATING:
            raise bad_request(f"session {s.id} is {s.status}, not CREATING")
        self._start(s, self._now())

    @locked
    def stop_session(self, session_id: str, *, immediate: bool = False) -> None:
        self._stop(self._session(session_id), self._now(), immediate=immediate)

    def _stop(self, s: Session, at: int, *, immediate: bool) -> None:
        if s.status in wire.SESSION_TERMINAL:
            return
        if immediate:
            self._set_session_status(s, wire.SESSION_STOPPED, at)
        elif s.status != wire.SESSION_STOPPING:
            self._set_session_status(s, wire.SESSION_STOPPING, at)
            self._later(at + round(self.session_stop_delay * US), s, (wire.SESSION_STOPPING,),
                        lambda t: self._set_session_status(s, wire.SESSION_STOPPED, t))  # fmt: skip

    @locked
    def fail_session(self, session_id: str, *, code: str | None = wire.SESSION_FAILED,
                     message: str | None = None) -> None:  # fmt: skip
        """``code=None``: the older error shape, without a code."""
        self._fail(self._session(session_id), code, message, self._now())

    def _fail(self, s: Session, code: str | None, message: str | None, at: int) -> None:
        message = message or wire.ERROR_MESSAGES.get(code or "", "The training session failed.")
        s.error = (code, message, at)
        self._set_session_status(s, wire.SESSION_ERROR, at)

    @locked
    def fail_next_session_creates(self, n: int = 1, *, code: str = wire.AT_CAPACITY,
                                  message: str | None = None) -> None:  # fmt: skip
        """The next ``n`` HTTP-created sessions go CREATING → ERROR instead of RUNNING."""
        msg = message or wire.ERROR_MESSAGES.get(code, "The session could not start.")
        self._fail_next_creates.extend([(code, msg)] * n)

    @locked
    def set_status(self, ident: str, status: str) -> None:
        """Force a status on a session or resource; unknown strings are stored raw (drift)."""
        now = self._now()
        if ident in self._sessions:
            self._set_session_status(self._sessions[ident], session_status(status), now)
        else:
            status = wire.full_status(status, wire.RESOURCE_STATUSES)
            self._set_resource_status(self._resource(ident, None), status, now)

    @locked
    def advance_steps(self, session_id: str, n: int = 1) -> int:
        s = self._session(session_id)
        s.step = s.trainer_step = s.step + n
        self._touch(s, self._now())
        return s.step

    @locked
    def patch_session(self, session_id: str, *, display_name: str | None = None,
                      wandb: dict[str, str] | None = None) -> None:  # fmt: skip
        """PATCH semantics: None leaves a field unchanged, ``""`` clears it."""
        s = self._session(session_id)
        if display_name is not None:
            s.display_name = display_name or None
        if wandb is not None:
            merged = {**(s.wandb or {}), **wandb}
            s.wandb = {k: v for k, v in merged.items() if v != ""} or None
        self._touch(s, self._now())

    @locked
    def mutate_session_json(self, session_id: str, *, drop: tuple[str, ...] = (),
                            extra: dict[str, Any] | None = None) -> None:  # fmt: skip
        s = self._session(session_id)
        s.drop_fields, s.extra_fields, s.json = tuple(drop), dict(extra) if extra else None, None

    @locked
    def add_inference_checkpoint(
        self, session_id: str, *, step: int | None = None, registration_shape: str | None = DEFAULT,
        registered: bool = True,
    ) -> str:  # fmt: skip
        """``registered=False``: unregistered until :meth:`register_checkpoint` (lag)."""
        kind, s = wire.CHECKPOINT_INFERENCE, self._session(session_id)
        return self._add_checkpoint(s, kind, step, registration_shape, registered).id

    @locked
    def add_training_checkpoint(self, session_id: str, *, step: int | None = None,
                                registered: bool = True) -> str:  # fmt: skip
        s = self._session(session_id)
        return self._add_checkpoint(s, wire.CHECKPOINT_TRAINING, step, DEFAULT, registered).id

    def _add_checkpoint(self, s: Session, kind: str, step: int | None, shape: str | None,
                        registered: bool) -> Checkpoint:  # fmt: skip
        shape = wire.check_shape(s.shape if shape == DEFAULT else shape)  # a session can mix shapes
        now = self._now()
        ck = Checkpoint(self._new_id(), s.id, kind, s.step if step is None else step, now, shape,
                        now if registered and shape is not None else None)  # fmt: skip
        self._checkpoints[ck.id] = ck
        self._checkpoint_index.add((ck.created_at, ck.id), kind)
        (s.inference if ck.is_inference else s.training).append(ck)
        self._touch(s, now)
        if ck.registered_at is not None:
            self._index_chat_names(ck, s)
        return ck

    @locked
    def register_checkpoint(self, checkpoint_id: str) -> None:
        ck = self._checkpoint(checkpoint_id)
        if ck.shape is None:
            raise ValueError(f"checkpoint {ck.id} uses no registration shape; it cannot register")
        if ck.registered_at is None:
            ck.registered_at, ck.json = self._now(), None
            s = self._sessions[ck.session_id]
            self._touch(s, ck.registered_at)
            self._index_chat_names(ck, s)

    def _index_chat_names(self, ck: Checkpoint, s: Session) -> None:
        if self._chat_names is not None:
            self._chat_names.update((name, ck.id) for name in wire.chat_names(ck, s))

    @locked
    def submit_operation(self, session_id: str, kind: str, idempotency_key: str | None,
                         body: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
        """On a session that is not RUNNING the operation is created FAILED (not an HTTP error)."""
        if kind not in wire.OPERATION_KINDS:
            raise not_found("operation kind", kind)
        s = self._session(session_id)
        if not idempotency_key:
            raise bad_request("the Idempotency-Key header is required", "Idempotency-Key", "missing_idempotency_key")  # fmt: skip
        if (original := self._idempotency.get((s.id, kind, idempotency_key))) is not None:
            return wire.operation_dict(self._operations[original])
        body = {} if body is None else body
        if not isinstance(body, dict):
            raise bad_request("request body must be a JSON object")
        if kind == "weights-sync" and _sync_type(body) not in wire.WEIGHT_SYNC_TYPES:
            raise bad_request("invalid weight_sync_type", param="weight_sync_type")
        for name in ("samples", "model_inputs"):
            if name in body and not isinstance(body[name], list):
                raise bad_request(f"{name} must be an array", param=name)
        now, polls = self._now(), self.operation_polls
        op = Operation(self._new_id(), s.id, kind, OP_PENDING, polls, body, now)
        self._operations[op.id] = op
        self._idempotency[(s.id, kind, idempotency_key)] = op.id
        self._record_activity(self._resources[s.resource_id], now)
        if s.status != wire.SESSION_RUNNING:
            self._fail_not_active(op, s)
        else:
            i = next((i for i, f in enumerate(self._fail_next_ops) if f[0] in (None, kind)), None)
            op.fail_with = self._fail_next_ops.pop(i)[1:] if i is not None else None
            if polls <= 0:
                self._complete(op, s, now)
        return wire.operation_dict(op)

    @locked
    def poll_operation(self, session_id: str, kind: str, operation_id: str) -> dict[str, Any]:
        s, op = self._session(session_id), self._operations.get(operation_id)
        if op is None or op.session_id != s.id or op.kind != kind:
            raise not_found(f"{kind} operation", operation_id, "operation_id")
        if op.status in (OP_PENDING, OP_RUNNING):
            op.polls_seen += 1
            if op.polls_seen >= op.polls_needed:
                self._complete(op, s, self._now())
            else:
                op.status = OP_RUNNING
        return wire.operation_dict(op)

    @locked
    def operation(self, operation_id: str) -> dict[str, Any]:
        """Without counting a poll."""
        op = get_or_404(self._operations, operation_id, "operation", "operation_id")
        return wire.operation_dict(op)

    @locked
    def fail_next_operations(self, n: int = 1, *, kind: str | None = None,
                             code: str = "TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR",
                             message: str = "The operation failed.") -> None:  # fmt: skip
        self._fail_next_ops.extend([(kind, code, message)] * n)

    def _fail_not_active(self, op: Operation, s: Session) -> None:
        op.status = OP_FAILED
        op.error = {"code": "TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE",
                    "message": f"training session {s.id} is not active (status {s.status})"}  # fmt: skip

    def _complete(self, op: Operation, s: Session, now: int) -> None:
        self._record_activity(self._resources[s.resource_id], now)
        if s.status != wire.SESSION_RUNNING:
            self._fail_not_active(op, s)
        elif op.fail_with is not None:
            op.status, op.error = OP_FAILED, {"code": op.fail_with[0], "message": op.fail_with[1]}
        else:
            op.output, op.status = self._apply(op, s, now), OP_COMPLETED

    def _apply(self, op: Operation, s: Session, now: int) -> dict[str, Any]:
        as_str, kind = s.int64_as_string, op.kind
        if kind.endswith("-checkpoint"):
            inference = kind == "inference-checkpoint"
            ctype = wire.CHECKPOINT_INFERENCE if inference else wire.CHECKPOINT_TRAINING
            ck = self._add_checkpoint(s, ctype, None, DEFAULT, registered=True)
            return {"checkpoint": wire.checkpoint_in_session(ck, s)}
        if kind == "optim-step":
            s.step = s.trainer_step = s.step + 1
            self._touch(s, now)
            return {"step": wire.int64(s.step, as_str)}
        if kind == "weights-sync":
            s.target_wv = s.trainer_step
            s.pending_publish = _sync_type(op.body) != wire.WEIGHT_SYNC_TYPES[0]  # not synchronous
            if not s.pending_publish:
                s.applied_wv = s.target_wv
            self._touch(s, now)
            return {"weights_version": wire.int64(s.target_wv, as_str)}
        rng = random.Random(f"{self.seed}:{op.id}")
        if kind == "sample":
            if s.pending_publish:  # a background publish is paid by the next sample
                s.applied_wv, s.pending_publish = s.target_wv, False
                self._touch(s, now)
            return {"results": _samples(op.body, s, rng)}
        if kind == "custom-forward-backward":
            return {}
        loss = 2.3 * math.exp(-s.step / 150.0) + rng.uniform(0.0, 0.05)
        kl, clip = rng.uniform(0.0, 0.02), rng.uniform(0.0, 0.2)
        metrics = {"kl": round(kl, 6), "clip_fraction": round(clip, 6)}
        return {"loss": round(loss, 6), "metrics": metrics}


def _sync_type(body: dict[str, Any]) -> Any:
    return body.get("weight_sync_type", wire.WEIGHT_SYNC_TYPES[0])


def _samples(body: dict[str, Any], s: Session, rng: random.Random) -> list[dict[str, Any]]:
    length = max(1, min(int((body.get("sampling_params") or {}).get("max_tokens") or 8), 16))
    results = []
    for _ in body.get("model_inputs") or [None]:
        sequences = []
        for _ in range(max(1, min(int(body.get("num_samples") or 1), 16))):
            tokens = [rng.randrange(151_000) for _ in range(length)]
            sequences.append({
                "tokens": [wire.int64(t, s.int64_as_string) for t in tokens],
                "logprobs": [round(-rng.expovariate(4.0), 5) for _ in tokens],
                "stop_reason": "STOP_REASON_STOP",
                "prompt_cache_hit_tokens": 0,
            })  # fmt: skip
        segments = [{"start_token": 0, "version": s.applied_wv}]
        results.append({"sequences": sequences, "policy_segments": segments})
    return results
