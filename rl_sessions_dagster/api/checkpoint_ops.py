"""Save a checkpoint and wait for it: the checkpoint operations over :class:`RLSessionsClient`.

Bounded like every wait in :mod:`~rl_sessions_dagster.api.lifecycle` (``timeout`` and/or an
absolute ``deadline`` on the client's retry clock); a checkpoint operation that fails raises
:class:`CheckpointFailed` carrying the operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .enums import OperationStatus
from .lifecycle import WaitFailed, wait_deadline
from .models import InferenceCheckpoint, TrainingCheckpoint
from .operation_results import Operation

if TYPE_CHECKING:  # the client (and httpx) load when a call is made
    from .client import RLSessionsClient

__all__ = [
    "CheckpointFailed",
    "create_inference_checkpoint_and_wait",
    "create_training_checkpoint_and_wait",
]


class CheckpointFailed(WaitFailed):
    """A checkpoint operation FAILED (or COMPLETED without a checkpoint in its output)."""

    def __init__(self, message: str, operation: Operation) -> None:
        super().__init__(message, operation.error)
        self.operation = operation


def _checkpoint_op(
    client: RLSessionsClient,
    session_id: str,
    kind: Literal["inference-checkpoint", "training-checkpoint"],
    *,
    timeout: float,
    deadline: float | None,
    poll_interval: float,
    idempotency_key: str | None,
) -> tuple[Operation, dict[str, Any]]:
    until = wait_deadline(client, timeout, deadline)
    op = client.submit_operation(session_id, kind, idempotency_key=idempotency_key, deadline=until)
    if not op.is_done:
        remaining = max(0.0, until - client.retry.clock())
        op = client.wait_for_operation(
            session_id, kind, op.id, poll_interval=poll_interval, timeout=remaining,
            deadline=until,
        )  # fmt: skip
    data = (op.output or {}).get("checkpoint")
    if op.status is not OperationStatus.COMPLETED or not isinstance(data, dict):
        err = op.error
        why = (
            f"{err.code_raw or 'no code'}: {err.message or ''}"
            if err
            else "no checkpoint in output"
        )
        raise CheckpointFailed(f"{kind} operation {op.id} of session {session_id}: {why}", op)
    return op, data


def create_inference_checkpoint_and_wait(
    client: RLSessionsClient,
    session_id: str,
    *,
    timeout: float = 7200.0,
    deadline: float | None = None,
    poll_interval: float = 2.0,
    idempotency_key: str | None = None,
) -> InferenceCheckpoint:
    """Save deployable weights and return the typed checkpoint (checkpoints of large models
    take well over five minutes, hence the two-hour default, as in the SDK)."""
    _, data = _checkpoint_op(
        client, session_id, "inference-checkpoint", timeout=timeout, deadline=deadline,
        poll_interval=poll_interval, idempotency_key=idempotency_key,
    )  # fmt: skip
    return InferenceCheckpoint.model_validate(data)


def create_training_checkpoint_and_wait(
    client: RLSessionsClient,
    session_id: str,
    *,
    timeout: float = 7200.0,
    deadline: float | None = None,
    poll_interval: float = 2.0,
    idempotency_key: str | None = None,
) -> TrainingCheckpoint:
    """Save the full training state (for ``resume_from_checkpoint_id``) and return it."""
    _, data = _checkpoint_op(
        client, session_id, "training-checkpoint", timeout=timeout, deadline=deadline,
        poll_interval=poll_interval, idempotency_key=idempotency_key,
    )  # fmt: skip
    return TrainingCheckpoint.model_validate(data)
