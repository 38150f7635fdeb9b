"""The seven async operation kinds: submit (idempotent per key), poll, complete with effects.

An operation completes on its N-th poll (``operation_polls``, default 1: the first GET returns
COMPLETED) and only then applies its effect, e.g. optim-step bumps the session's step and
inference-checkpoint appends a checkpoint in the session's registration shape.
"""

from __future__ import annotations

import math
import random
from typing import Any

from .checkpoints import DEFAULT
from .constants import (
    CHECKPOINT_INFERENCE,
    CHECKPOINT_TRAINING,
    OP_COMPLETED,
    OP_ERROR_INTERNAL,
    OP_ERROR_SESSION_NOT_ACTIVE,
    OP_FAILED,
    OP_PENDING,
    OP_RUNNING,
    OPERATION_KINDS,
    SESSION_RUNNING,
    WEIGHT_SYNC_TYPES,
)
from .errors import bad_request, not_found
from .lifecycle import LifecycleMixin
from .state import US, Operation, Session, locked
from .wire import checkpoint_in_session, int64, operation_dict


def validate_operation_body(kind: str, body: Any) -> dict[str, Any]:
    """Light validation: types of the fields the simulator reads, nothing more (lenient on
    purpose, so client tests can submit minimal bodies)."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    sync = body.get("weight_sync_type", WEIGHT_SYNC_TYPES[0])
    if kind == "weights-sync" and sync not in WEIGHT_SYNC_TYPES:
        raise bad_request("invalid weight_sync_type", param="weight_sync_type")
    for name in ("samples", "model_inputs"):
        if name in body and not isinstance(body[name], list):
            raise bad_request(f"{name} must be an array", param=name)
    return body


class OperationsMixin(LifecycleMixin):
    """Operations on sessions (every submission counts as activity on the session's resource)."""

    operation_polls: int
    operation_polls_by_kind: dict[str, int]
    _fail_next_ops: list[tuple[str | None, str, str]]

    @locked
    def submit_operation(
        self,
        session_id: str,
        kind: str,
        idempotency_key: str | None,
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Submit an operation; a repeated (session, kind, key) returns the original operation.

        On a session that is not RUNNING the operation is created FAILED with
        ``TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE`` (a domain error, not an HTTP one).
        """
        if kind not in OPERATION_KINDS:
            raise not_found("operation kind", kind)
        s = self._session(session_id)
        if not idempotency_key:
            raise bad_request(
                "the Idempotency-Key header is required",
                param="Idempotency-Key",
                code="missing_idempotency_key",
            )
        key = (s.id, kind, idempotency_key)
        original = self._idempotency.get(key)
        if original is not None:
            return operation_dict(self._operations[original])
        body = validate_operation_body(kind, body)
        now = self._now()
        op = Operation(
            id=self._new_id(),
            session_id=s.id,
            kind=kind,
            status=OP_PENDING,
            polls_needed=self.operation_polls_by_kind.get(kind, self.operation_polls),
            body=body,
            idempotency_key=idempotency_key,
            created_at=now,
        )
        self._operations[op.id] = op
        self._idempotency[key] = op.id
        self._record_activity(self._resources[s.resource_id], now)
        if s.status != SESSION_RUNNING:
            self._fail_not_active(op, s)
        else:
            op.fail_with = self._take_operation_failure(kind)
            if op.polls_needed <= 0:
                self._complete(op, s, now)
        return operation_dict(op)

    @locked
    def poll_operation(self, session_id: str, kind: str, operation_id: str) -> dict[str, Any]:
        """Retrieve an operation; each poll of an unfinished one counts toward its completion."""
        s = self._session(session_id)
        op = self._operations.get(operation_id)
        if op is None or op.session_id != s.id or op.kind != kind:
            raise not_found(f"{kind} operation", operation_id, "operation_id")
        if op.status in (OP_PENDING, OP_RUNNING):
            op.polls_seen += 1
            if op.polls_seen >= op.polls_needed:
                self._complete(op, s, self._now())
            else:
                op.status = OP_RUNNING
        return operation_dict(op)

    @locked
    def operation(self, operation_id: str) -> dict[str, Any]:
        """Wire JSON of an operation, without counting a poll."""
        op = self._operations.get(operation_id)
        if op is None:
            raise not_found("operation", operation_id, "operation_id")
        return operation_dict(op)

    @locked
    def fail_next_operations(
        self,
        n: int = 1,
        *,
        kind: str | None = None,
        code: str = OP_ERROR_INTERNAL,
        message: str = "The operation failed.",
    ) -> None:
        """Make the next ``n`` submitted operations (of ``kind``, or any) end FAILED."""
        self._fail_next_ops.extend([(kind, code, message)] * n)

    def _take_operation_failure(self, kind: str) -> tuple[str, str] | None:
        for i, (k, code, message) in enumerate(self._fail_next_ops):
            if k is None or k == kind:
                del self._fail_next_ops[i]
                return (code, message)
        return None

    def _fail_not_active(self, op: Operation, s: Session) -> None:
        op.status = OP_FAILED
        op.error = {
            "code": OP_ERROR_SESSION_NOT_ACTIVE,
            "message": f"training session {s.id} is not active (status {s.status})",
        }

    def _complete(self, op: Operation, s: Session, now: int) -> None:
        self._record_activity(self._resources[s.resource_id], now)
        if s.status != SESSION_RUNNING:
            self._fail_not_active(op, s)
        elif op.fail_with is not None:
            op.status = OP_FAILED
            op.error = {"code": op.fail_with[0], "message": op.fail_with[1]}
        else:
            op.output = self._apply(op, s, now)
            op.status = OP_COMPLETED

    def _apply(self, op: Operation, s: Session, now: int) -> dict[str, Any]:
        """The effect of a completed operation on the session, and its ``output``."""
        as_str = s.int64_as_string
        kind = op.kind
        if kind in ("inference-checkpoint", "training-checkpoint"):
            ctype = CHECKPOINT_INFERENCE if kind == "inference-checkpoint" else CHECKPOINT_TRAINING
            lag = self.registration_delay
            ck = self._add_checkpoint(s, ctype, None, DEFAULT, registered=lag <= 0)
            if lag > 0 and ck.shape is not None:
                self._schedule(now + round(lag * US), "register", ck.id)
            return {"checkpoint": checkpoint_in_session(ck, s)}
        if kind == "optim-step":
            s.step += 1
            s.trainer_step = s.step
            self._touch_session(s, now)
            return {"step": int64(s.step, as_str)}
        if kind == "weights-sync":
            s.target_wv = s.trainer_step
            sync = op.body.get("weight_sync_type", WEIGHT_SYNC_TYPES[0])
            s.pending_publish = sync != WEIGHT_SYNC_TYPES[0]
            if not s.pending_publish:
                s.applied_wv = s.target_wv
            self._touch_session(s, now)
            return {"weights_version": int64(s.target_wv, as_str)}
        rng = random.Random(f"{self.seed}:{op.id}")
        if kind == "sample":
            if s.pending_publish:  # a background publish is paid by the next sample
                s.applied_wv, s.pending_publish = s.target_wv, False
                self._touch_session(s, now)
            return {"results": _sample_results(op.body, s, rng)}
        if kind == "custom-forward-backward":
            return {}
        loss = 2.3 * math.exp(-s.step / 150.0) + rng.uniform(0.0, 0.05)
        return {
            "loss": round(loss, 6),
            "metrics": {
                "kl": round(rng.uniform(0.0, 0.02), 6),
                "clip_fraction": round(rng.uniform(0.0, 0.2), 6),
            },
        }


def _sample_results(body: dict[str, Any], s: Session, rng: random.Random) -> list[dict[str, Any]]:
    inputs = body.get("model_inputs") or [None]
    num = int(body.get("num_samples") or 1)
    params = body.get("sampling_params") or {}
    length = max(1, min(int(params.get("max_tokens") or 8), 16))
    as_str = s.int64_as_string
    results = []
    for _ in inputs:
        sequences = []
        for _ in range(max(1, min(num, 16))):
            tokens = [rng.randrange(151_000) for _ in range(length)]
            sequences.append(
                {
                    "tokens": [int64(t, as_str) for t in tokens],
                    "logprobs": [round(-rng.expovariate(4.0), 5) for _ in tokens],
                    "stop_reason": "STOP_REASON_STOP",
                    "prompt_cache_hit_tokens": 0,
                }
            )
        results.append(
            {
                "sequences": sequences,
                "policy_segments": [{"start_token": 0, "version": s.applied_wv}],
            }
        )
    return results
