"""Asynchronous training operations: submit, poll, wait, and the typed results of finished ones
(SDK 3.1.1 shapes). ``Operation.output`` stays the raw dict, so nothing is lost when it drifts."""

from __future__ import annotations

import uuid
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError

from ._http import BaseClient, compact, segment, wait_deadline
from .enums import OperationErrorCode, OperationStatus, StopReason, WeightSyncType
from .models import APIModel, InferenceCheckpoint, TopLevelModel, TrainingCheckpoint
from .pages import RawEnum, salvage


class TensorData(APIModel):
    """A tensor as flattened row-major values (``dtype`` is ``int64`` or ``float32``)."""

    data: list[float] | None = None
    dtype: str | None = None
    shape: list[int] | None = None


class LossFnOutput(APIModel):
    tensors: dict[str, TensorData] | None = None


class ForwardBackwardResult(APIModel):
    loss: float | None = None
    metrics: dict[str, float] | None = None
    loss_fn_outputs: list[LossFnOutput] | None = None


class CustomForwardBackwardResult(APIModel):
    """The SDK declares no fields."""


class OptimStepResult(APIModel):
    step: int | None = None


class WeightsSyncResult(APIModel):
    weights_version: int | None = None


class PolicyVersionSegment(APIModel):
    start_token: int | None = None
    version: int | None = None


class PromptTopLogprobs(APIModel):
    logprobs: list[float] | None = None
    token_ids: list[int] | None = None


class SampledSequence(APIModel):
    tokens: list[int] = Field(default_factory=list)
    logprobs: list[float] | None = None
    raw_stop_reason: str | None = Field(default=None, alias="stop_reason")
    prompt_cache_hit_tokens: int | None = None
    routed_experts_key: str | None = None

    @property
    def stop_reason(self) -> StopReason | None:
        return StopReason.parse(self.raw_stop_reason) if self.raw_stop_reason else None


class SampleResult(APIModel):
    sequences: list[SampledSequence] = Field(default_factory=list)
    policy_segments: list[PolicyVersionSegment] | None = None
    prompt_logprobs: list[float] | None = None
    topk_prompt_logprobs: list[PromptTopLogprobs] | None = None


class SampleOutput(APIModel):
    """One :class:`SampleResult` per model input, in request order."""

    results: list[SampleResult] = Field(default_factory=list)


class InferenceCheckpointResult(APIModel):
    checkpoint: InferenceCheckpoint | None = None


class TrainingCheckpointResult(APIModel):
    checkpoint: TrainingCheckpoint | None = None


OperationKind = Literal[
    "forward-backward",
    "custom-forward-backward",
    "optim-step",
    "weights-sync",
    "sample",
    "inference-checkpoint",
    "training-checkpoint",
]
OPERATION_KINDS: tuple[str, ...] = get_args(OperationKind)
#: In the order of :data:`OperationKind`.
OperationResult = (
    ForwardBackwardResult
    | CustomForwardBackwardResult
    | OptimStepResult
    | WeightsSyncResult
    | SampleOutput
    | InferenceCheckpointResult
    | TrainingCheckpointResult
)
RESULT_MODELS: dict[str, type[APIModel]] = dict(
    zip(OPERATION_KINDS, get_args(OperationResult), strict=True)
)


class OperationError(APIModel):
    code_raw: str | None = Field(default=None, alias="code")
    message: str | None = None

    @property
    def code(self) -> OperationErrorCode | None:
        return OperationErrorCode.parse(self.code_raw) if self.code_raw else None


class Operation(TopLevelModel):
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
        """``output`` as ``kind``'s typed result (None: not done, unknown kind); bad fields None."""
        model = RESULT_MODELS.get(self.kind or "")
        if model is None or self.output is None:
            return None
        try:
            return model.model_validate(self.output)  # type: ignore[return-value]
        except ValidationError as exc:
            return salvage(model, self.output, exc)[0]  # type: ignore[return-value]

    @property
    def checkpoint(self) -> InferenceCheckpoint | TrainingCheckpoint | None:
        """For checkpoint operations, the checkpoint saved."""
        data = (self.output or {}).get("checkpoint")
        model = TrainingCheckpoint if self.kind == "training-checkpoint" else InferenceCheckpoint
        return model.model_validate(data) if isinstance(data, dict) else None


JSON = dict[str, Any]
_SESSIONS = "/v1/rl/training-sessions"


def _operations(session_id: str, kind: str) -> str:
    path = f"{_SESSIONS}/{segment(session_id, 'session_id')}/operations/"
    if kind not in OPERATION_KINDS:
        raise ValueError(f"unknown operation kind {kind!r}; expected one of {OPERATION_KINDS}")
    return path + kind


class OperationsAPI(BaseClient):
    """The operation methods of :class:`~rl_sessions_dagster.api.client.RLSessionsClient`."""

    def submit_operation(
        self,
        session_id: str,
        kind: OperationKind,
        body: JSON | None = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        """Submit with an ``Idempotency-Key`` (a new uuid4 unless given) reused on every retry:
        the server returns the original operation instead of running it twice."""
        return self._submit(session_id, kind, body, idempotency_key, deadline)

    def _submit(
        self, session_id: str, kind: str, body: JSON | None, key: str | None, deadline: float | None
    ) -> Operation:
        path = _operations(session_id, kind)
        headers = {"Idempotency-Key": key or str(uuid.uuid4())}
        op = self._request(
            "POST", path, Operation, json=body, headers=headers, idempotent=True, deadline=deadline
        )
        op.kind = op.kind or kind
        return op

    def forward_backward(
        self,
        session_id: str,
        *,
        loss: JSON,
        samples: list[JSON],
        forward_only: bool | None = None,
        return_loss_fn_outputs: bool | None = None,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        body = compact(
            loss=loss,
            samples=samples,
            forward_only=forward_only,
            return_loss_fn_outputs=return_loss_fn_outputs,
        )
        return self._submit(session_id, "forward-backward", body, idempotency_key, deadline)

    def custom_forward_backward(
        self,
        session_id: str,
        *,
        gradients: list[JSON],
        samples: list[JSON],
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        body = {"gradients": gradients, "samples": samples}
        return self._submit(session_id, "custom-forward-backward", body, idempotency_key, deadline)

    def optim_step(
        self,
        session_id: str,
        *,
        adam_params: JSON | None = None,
        muon_params: JSON | None = None,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        body = compact(adam_params=adam_params, muon_params=muon_params)
        return self._submit(session_id, "optim-step", body, idempotency_key, deadline)

    def weights_sync(
        self,
        session_id: str,
        *,
        weight_sync_type: WeightSyncType | str,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        """Publish the trainer's weights to the generator; an unknown type is sent as given."""
        member = WeightSyncType.parse(weight_sync_type)
        wire = member.value if member is not WeightSyncType.UNKNOWN else str(weight_sync_type)
        body = {"weight_sync_type": wire}
        return self._submit(session_id, "weights-sync", body, idempotency_key, deadline)

    def sample(
        self,
        session_id: str,
        *,
        model_inputs: list[JSON],
        num_samples: int | None = None,
        sampling_params: JSON | None = None,
        prompt_logprobs: bool | None = None,
        topk_prompt_logprobs: int | None = None,
        return_routed_experts: bool | None = None,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Operation:
        body = compact(
            model_inputs=model_inputs,
            num_samples=num_samples,
            sampling_params=sampling_params,
            prompt_logprobs=prompt_logprobs,
            topk_prompt_logprobs=topk_prompt_logprobs,
            return_routed_experts=return_routed_experts,
        )
        return self._submit(session_id, "sample", body, idempotency_key, deadline)

    def create_inference_checkpoint(
        self, session_id: str, *, idempotency_key: str | None = None, deadline: float | None = None
    ) -> Operation:
        return self._submit(session_id, "inference-checkpoint", None, idempotency_key, deadline)

    def create_training_checkpoint(
        self, session_id: str, *, idempotency_key: str | None = None, deadline: float | None = None
    ) -> Operation:
        return self._submit(session_id, "training-checkpoint", None, idempotency_key, deadline)

    def get_operation(
        self,
        session_id: str,
        kind: OperationKind,
        operation_id: str,
        *,
        deadline: float | None = None,
    ) -> Operation:
        path = f"{_operations(session_id, kind)}/{segment(operation_id, 'operation_id')}"
        op = self._request("GET", path, Operation, deadline=deadline)
        op.kind = op.kind or kind
        return op

    def wait_for_operation(
        self,
        session_id: str,
        kind: OperationKind,
        operation_id: str,
        *,
        poll_interval: float = 0.5,
        timeout: float = 300.0,
        deadline: float | None = None,
    ) -> Operation:
        """Poll until COMPLETED or FAILED (not raised); :class:`DeadlineExceeded` on time-out."""
        return self._poll(
            lambda until: self.get_operation(session_id, kind, operation_id, deadline=until),
            lambda op: op.is_done,
            lambda op: (
                f"operation {kind}/{operation_id} of session {session_id} still "
                f"{op.raw_status or 'without status'}"
            ),
            poll_interval=poll_interval,
            until=wait_deadline(self, timeout, deadline),
        )
