"""Checkpoints after training: save one and wait, and from its registration what deployment needs,
with an error saying *why* one cannot be deployed (not a ``None`` turning into a 404 later)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

from .client import RLSessionsClient
from .enums import CheckpointType, CheckpointVariant, OperationStatus
from .lifecycle import WaitFailed, wait_deadline
from .models import (
    Checkpoint,
    CheckpointFile,
    InferenceCheckpoint,
    Registration,
    TrainingCheckpoint,
)
from .operations import Operation, OperationKind

C = TypeVar("C", InferenceCheckpoint, TrainingCheckpoint)
DeploymentKind = Literal["adapter", "model", "legacy"]


class _CheckpointError(ValueError):
    def __init__(self, message: str, *, checkpoint_id: str | None = None) -> None:
        super().__init__(message)
        self.checkpoint_id = checkpoint_id


class CheckpointNotRegisteredError(_CheckpointError):
    """The checkpoint has no usable registry registration, so it cannot be deployed."""


class CheckpointNotDownloadableError(_CheckpointError):
    """The checkpoint (or the requested variant of it) has no files to download."""


@dataclass(frozen=True)
class DeploymentTarget:
    """What serving a checkpoint needs. ``inference_model``, the chat ``model``, is the adapter id,
    else the model id, else the legacy name, as ``kind`` says (None: unregistered, not required)."""

    checkpoint_id: str | None
    model_id: str | None = None
    model_revision_id: str | None = None
    adapter_id: str | None = None
    adapter_revision_id: str | None = None
    legacy_model_name: str | None = None
    inference_model: str | None = None
    kind: DeploymentKind | None = None
    shape: str | None = None

    @property
    def is_deployable(self) -> bool:
        return self.inference_model is not None

    @property
    def registry_id(self) -> str | None:
        """The registry object to deploy on a dedicated endpoint."""
        return self.adapter_id or self.model_id

    @property
    def registry_revision_id(self) -> str | None:
        return self.adapter_revision_id if self.adapter_id else self.model_revision_id


def deployment_target(
    checkpoint: InferenceCheckpoint | Checkpoint | Registration | None, *, required: bool = True
) -> DeploymentTarget:
    """Nothing deployable raises :class:`CheckpointNotRegisteredError` (``required=False``:
    ``kind=None``); a training checkpoint always does."""
    checkpoint_id: str | None = None
    reg: Registration | None
    if isinstance(checkpoint, Registration) or checkpoint is None:
        reg = checkpoint
    elif isinstance(checkpoint, Checkpoint):
        checkpoint_id = checkpoint.id
        if checkpoint.type is CheckpointType.TRAINING:
            raise CheckpointNotRegisteredError(
                f"checkpoint {checkpoint.id} is a TRAINING checkpoint (training state for "
                "resume_from_checkpoint_id); only INFERENCE checkpoints can be deployed",
                checkpoint_id=checkpoint.id,
            )
        reg = checkpoint.inference_registration
    elif isinstance(checkpoint, InferenceCheckpoint):
        checkpoint_id = checkpoint.id
        reg = checkpoint.registration
    else:
        raise TypeError(
            "deployment_target() takes an InferenceCheckpoint, Checkpoint or Registration, "
            f"not {type(checkpoint).__name__}"
        )
    kind: DeploymentKind | None = None
    if reg is not None and reg.is_registered:
        kind = "adapter" if reg.adapter_id else "model" if reg.model_id else "legacy"
    if reg is None or kind is None:
        if required:
            what = f"checkpoint {checkpoint_id}" if checkpoint_id else "this checkpoint"
            detail = "has no registration" if reg is None else "has an empty registration"
            raise CheckpointNotRegisteredError(
                f"{what} {detail}, so it cannot be deployed. Its weights were not uploaded to the "
                "Together model registry: either the base model does not support registry upload "
                "(e.g. MiniMax-M3; download the weights instead with download_urls()), or the "
                "registration has not appeared yet (re-read the checkpoint later).",
                checkpoint_id=checkpoint_id,
            )
        return DeploymentTarget(checkpoint_id, shape=reg.shape if reg else None)
    return DeploymentTarget(
        checkpoint_id=checkpoint_id,
        model_id=reg.model_id,
        model_revision_id=reg.model_revision_id,
        adapter_id=reg.adapter_id,
        adapter_revision_id=reg.adapter_revision_id,
        legacy_model_name=reg.legacy_model_name,
        inference_model=reg.deployable_model,
        kind=kind,
        shape=reg.shape,
    )


def _is_lora(checkpoint: Checkpoint) -> bool:
    reg = checkpoint.inference_registration
    return bool(checkpoint.lora_rank) or bool(reg is not None and reg.adapter_id)


def choose_variant(checkpoint: Checkpoint) -> CheckpointVariant:
    """ADAPTER (the small download) for LoRA checkpoints, MERGED (full weights) otherwise."""
    return CheckpointVariant.ADAPTER if _is_lora(checkpoint) else CheckpointVariant.MERGED


def download_urls(
    client: RLSessionsClient,
    checkpoint: str | Checkpoint,
    variant: CheckpointVariant | str | None = None,
    *,
    deadline: float | None = None,
) -> list[CheckpointFile]:
    """Presigned URLs of an inference checkpoint's files (``variant=None``: :func:`choose_variant`);
    a training checkpoint, or a full-weight one's ADAPTER, raises before any download request."""
    ck = checkpoint
    if not isinstance(ck, Checkpoint):
        ck = client.get_checkpoint(ck, deadline=deadline)
    if ck.type is CheckpointType.TRAINING:
        raise CheckpointNotDownloadableError(
            f"checkpoint {ck.id} is a TRAINING checkpoint; only INFERENCE checkpoints have "
            "downloadable weights (resume a session from it instead)",
            checkpoint_id=ck.id,
        )
    chosen = choose_variant(ck) if variant is None else CheckpointVariant.parse(variant)
    if chosen is CheckpointVariant.UNKNOWN:
        raise ValueError(f"unknown checkpoint variant {variant!r}; use MERGED or ADAPTER")
    if chosen is CheckpointVariant.ADAPTER and not _is_lora(ck):
        raise CheckpointNotDownloadableError(
            f"checkpoint {ck.id} is a full-weight checkpoint (no LoRA rank, no adapter "
            "registration): it has no ADAPTER variant; use MERGED",
            checkpoint_id=ck.id,
        )
    return client.get_checkpoint_download(ck.id, chosen, deadline=deadline).data


class CheckpointFailed(WaitFailed):
    """A checkpoint operation FAILED (or COMPLETED without a checkpoint in its output)."""

    def __init__(self, message: str, operation: Operation) -> None:
        super().__init__(message, operation.error)
        self.operation = operation


def _checkpoint_and_wait(
    client: RLSessionsClient,
    session_id: str,
    model: type[C],
    timeout: float,
    deadline: float | None,
    poll_interval: float,
    idempotency_key: str | None,
) -> C:
    kind: OperationKind = (
        "training-checkpoint" if model is TrainingCheckpoint else "inference-checkpoint"
    )
    until = wait_deadline(client, timeout, deadline)
    op = client.submit_operation(session_id, kind, idempotency_key=idempotency_key, deadline=until)
    if not op.is_done:
        op = client.wait_for_operation(
            session_id,
            kind,
            op.id,
            poll_interval=poll_interval,
            timeout=until - client.retry.clock(),
            deadline=until,
        )
    data = (op.output or {}).get("checkpoint")
    if op.status is not OperationStatus.COMPLETED or not isinstance(data, dict):
        why = "no checkpoint in output"
        if (err := op.error) is not None:
            why = f"{err.code_raw or 'no code'}: {err.message or ''}"
        raise CheckpointFailed(f"{kind} operation {op.id} of session {session_id}: {why}", op)
    return model.model_validate(data)


def create_inference_checkpoint_and_wait(
    client: RLSessionsClient,
    session_id: str,
    *,
    timeout: float = 7200.0,
    deadline: float | None = None,
    poll_interval: float = 2.0,
    idempotency_key: str | None = None,
) -> InferenceCheckpoint:
    """Save deployable weights (large models take well over 5 minutes: the SDK's 2-hour default)."""
    return _checkpoint_and_wait(
        client, session_id, InferenceCheckpoint, timeout, deadline, poll_interval, idempotency_key
    )


def create_training_checkpoint_and_wait(
    client: RLSessionsClient,
    session_id: str,
    *,
    timeout: float = 7200.0,
    deadline: float | None = None,
    poll_interval: float = 2.0,
    idempotency_key: str | None = None,
) -> TrainingCheckpoint:
    return _checkpoint_and_wait(
        client, session_id, TrainingCheckpoint, timeout, deadline, poll_interval, idempotency_key
    )
