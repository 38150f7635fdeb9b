"""Asynchronous training operations, and the typed results of finished ones (SDK 3.1.1
``*Result`` shapes).

``Operation.output`` stays the raw dict (nothing is lost when the shape drifts);
:attr:`Operation.result` reads it as the model for the operation's kind. int64 values sent as strings (``"step": "12"``) and numeric
strings in general become numbers here. Every field is optional, as everywhere in this package.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from .enums import OperationErrorCode, OperationStatus, StopReason
from .fields import RawEnum
from .models import APIModel, InferenceCheckpoint, TopLevelModel, TrainingCheckpoint
from .pages import salvage


class TensorData(APIModel):
    """A tensor as flattened row-major values (``dtype`` is ``int64`` or ``float32``)."""

    data: list[float] | None = None
    dtype: str | None = None
    shape: list[int] | None = None


class LossFnOutput(APIModel):
    """Per-sample loss-function tensors, e.g. ``tensors["logprobs"]``."""

    tensors: dict[str, TensorData] | None = None


class ForwardBackwardResult(APIModel):
    """Result of ``forward-backward``: the loss and loss-specific metrics (KL, clip fraction)."""

    loss: float | None = None
    metrics: dict[str, float] | None = None
    loss_fn_outputs: list[LossFnOutput] | None = None


class CustomForwardBackwardResult(APIModel):
    """Result of ``custom-forward-backward`` (the SDK declares no fields)."""


class OptimStepResult(APIModel):
    """Result of ``optim-step``: the optimizer step now reached."""

    step: int | None = None


class WeightsSyncResult(APIModel):
    """Result of ``weights-sync``: the policy version now (or soon) served for sampling."""

    weights_version: int | None = None


class PolicyVersionSegment(APIModel):
    """A span of a sampled sequence generated under one policy version."""

    start_token: int | None = None
    version: int | None = None


class PromptTopLogprobs(APIModel):
    logprobs: list[float] | None = None
    token_ids: list[int] | None = None


class SampledSequence(APIModel):
    """One generated completion: tokens, their logprobs and why generation stopped."""

    tokens: list[int] = Field(default_factory=list)
    logprobs: list[float] | None = None
    raw_stop_reason: str | None = Field(default=None, alias="stop_reason")
    prompt_cache_hit_tokens: int | None = None
    routed_experts_key: str | None = None

    @property
    def stop_reason(self) -> StopReason | None:
        """The typed stop reason; ``UNKNOWN`` for a new value (the raw one is kept)."""
        return StopReason.parse(self.raw_stop_reason) if self.raw_stop_reason else None


class SampleResult(APIModel):
    """The completions generated for one model input."""

    sequences: list[SampledSequence] = Field(default_factory=list)
    policy_segments: list[PolicyVersionSegment] | None = None
    prompt_logprobs: list[float] | None = None
    topk_prompt_logprobs: list[PromptTopLogprobs] | None = None


class SampleOutput(APIModel):
    """Result of ``sample``: one :class:`SampleResult` per model input, in request order."""

    results: list[SampleResult] = Field(default_factory=list)


class InferenceCheckpointResult(APIModel):
    checkpoint: InferenceCheckpoint | None = None


class TrainingCheckpointResult(APIModel):
    checkpoint: TrainingCheckpoint | None = None


OperationResult = (
    ForwardBackwardResult
    | CustomForwardBackwardResult
    | OptimStepResult
    | WeightsSyncResult
    | SampleOutput
    | InferenceCheckpointResult
    | TrainingCheckpointResult
)

#: The result model of each operation kind (the URL segment).
RESULT_MODELS: dict[str, type[APIModel]] = {
    "forward-backward": ForwardBackwardResult,
    "custom-forward-backward": CustomForwardBackwardResult,
    "optim-step": OptimStepResult,
    "weights-sync": WeightsSyncResult,
    "sample": SampleOutput,
    "inference-checkpoint": InferenceCheckpointResult,
    "training-checkpoint": TrainingCheckpointResult,
}


def parse_result(kind: str | None, output: dict[str, Any] | None) -> Any:
    """``output`` as the result model of ``kind``; None when either is unknown or absent."""
    model = RESULT_MODELS.get(kind or "")
    if model is None or output is None:
        return None
    try:
        return model.model_validate(output)
    except ValidationError as exc:  # a drifted field: None, the raw value stays in ``output``
        return salvage(model, output, exc)[0]


class OperationError(APIModel):
    """Why an operation FAILED; the raw code is kept beside the typed one."""

    code_raw: str | None = Field(default=None, alias="code")
    message: str | None = None

    @property
    def code(self) -> OperationErrorCode | None:
        return OperationErrorCode.parse(self.code_raw) if self.code_raw else None


class Operation(TopLevelModel):
    """An asynchronous training operation (forward-backward, optim-step, checkpoint, ...)."""

    id: str
    raw_status: RawEnum = Field(default="", alias="status")
    output: dict[str, Any] | None = None
    error: OperationError | None = None
    kind: str | None = None

    @property
    def status(self) -> OperationStatus:
        return OperationStatus.parse(self.raw_status)

    @property
    def is_done(self) -> bool:
        return self.status.is_done

    @property
    def result(self) -> OperationResult | None:
        """``output`` as the typed result of this operation's ``kind`` (None before it is
        done, or for an unknown kind); a field that does not parse reads as None."""
        return parse_result(self.kind, self.output)

    @property
    def checkpoint(self) -> InferenceCheckpoint | TrainingCheckpoint | None:
        """For checkpoint operations: the checkpoint saved, typed by the operation's kind.

        A ``training-checkpoint`` operation saves a :class:`TrainingCheckpoint` (its
        registration is a bare registry artifact); any other kind reads as inference.
        """
        data = (self.output or {}).get("checkpoint")
        if not isinstance(data, dict):
            return None
        if self.kind == "training-checkpoint":
            return TrainingCheckpoint.model_validate(data)
        return InferenceCheckpoint.model_validate(data)
