"""Every payload in ``fixtures/`` parses, round-trips, and reads the way a consumer expects.

The corpus holds the seed pages' examples verbatim, the three historical registration shapes
(API doc §3.3), int64-as-strings, missing/null blocks, unknown fields and enum values. A file's
name says which model reads it: ``<prefix>__<case>.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from rl_sessions_dagster.api import Checkpoint, ModelResource, Page, SessionStatus, TrainingSession
from rl_sessions_dagster.api.enums import (
    CheckpointType,
    ModelResourceStatus,
    OperationStatus,
    SessionErrorCode,
)
from rl_sessions_dagster.api.errors import parse_error_body
from rl_sessions_dagster.api.models import CheckpointDownload, CostEstimate, SupportedModel
from rl_sessions_dagster.api.operations import Operation

FIXTURES = Path(__file__).parent / "fixtures"
MODELS: dict[str, type[BaseModel]] = {
    "session": TrainingSession,
    "session_page": Page[TrainingSession],
    "checkpoint": Checkpoint,
    "checkpoint_page": Page[Checkpoint],
    "checkpoint_download": CheckpointDownload,
    "model_resource": ModelResource,
    "model_resource_page": Page[ModelResource],
    "cost_estimate": CostEstimate,
    "supported_models": Page[SupportedModel],
    "operation": Operation,
}
PAYLOADS = sorted(p for p in FIXTURES.glob("*.json") if not p.name.startswith("error__"))
ERROR_BODIES = sorted(FIXTURES.glob("error__*.json"))


def load(name: str) -> Any:
    path = FIXTURES / name
    return MODELS[path.stem.split("__")[0]].model_validate_json(path.read_bytes())


def test_corpus_is_not_empty_and_every_file_is_claimed() -> None:
    assert len(PAYLOADS) >= 30
    assert {p.stem.split("__")[0] for p in PAYLOADS} <= MODELS.keys()


@pytest.mark.parametrize("path", PAYLOADS, ids=lambda p: p.stem)
def test_every_payload_parses_and_round_trips(path: Path) -> None:
    model = MODELS[path.stem.split("__")[0]]
    parsed = model.model_validate_json(path.read_bytes())
    # Also the dict path (what a cursor or a test fixture would use).
    assert model.model_validate(json.loads(path.read_bytes())) == parsed
    assert model.model_validate_json(parsed.model_dump_json(by_alias=True)) == parsed


def _legacy(s: TrainingSession) -> None:
    reg = s.inference_checkpoints[0].registration
    assert reg is not None and reg.shape == "legacy"
    assert reg.legacy_model_name == "username/Meta-Llama-3-8B-rl-step-42-20260216"
    assert reg.registered_at is not None and reg.is_registered
    assert reg.deployable_model == reg.legacy_model_name
    assert s.error is not None and s.error.code is None  # `error` without `code`
    assert s.status is SessionStatus.UNKNOWN  # the seed example has no status at all
    assert s.wandb_url and s.policy_state and s.policy_state.pending_publish is True


def _object_ids(s: TrainingSession) -> None:
    reg = s.inference_checkpoints[0].registration
    assert reg is not None and reg.shape == "object_ids"
    assert (reg.model_id, reg.adapter_id, reg.adapter_revision_id) == (
        "ml_model1", "ml_adapter1", "rv_adapter1",
    )  # fmt: skip
    assert reg.legacy_model_name and reg.registered_at
    assert reg.deployable_model == "ml_adapter1"
    assert s.training_checkpoints[0].registration is not None
    assert s.is_terminal


def _current(s: TrainingSession) -> None:
    first, unregistered = s.inference_checkpoints
    assert first.registration is not None and first.registration.shape == "current"
    assert first.registration.model_id == "ml_abc123" and first.is_registered
    assert not unregistered.is_registered
    assert s.error is not None and s.error.code is SessionErrorCode.RESOURCE_AT_CAPACITY
    assert s.status is SessionStatus.ERROR and s.is_terminal
    assert s.lora_config is not None and s.lora_config.seed == 7


def _int64(s: TrainingSession) -> None:
    assert s.step == 9007199254740993  # > 2**53: exact, not via float
    assert s.policy_state is not None and s.policy_state.trainer_step == 9007199254740993
    assert s.lora_config is not None and s.lora_config.seed == 1234567890123
    assert s.inference_checkpoints[0].step == 9007199254740993


def _nulls(s: TrainingSession) -> None:
    assert s.inference_checkpoints == [] and s.metadata.wandb is None and s.error is None
    assert s.training_checkpoints[0].registration is None  # {} means "not registered"
    assert s.status is SessionStatus.EXPIRED


def _unknown(s: TrainingSession) -> None:
    assert s.status is SessionStatus.UNKNOWN and s.raw_status == "TRAINING_SESSION_STATUS_PAUSED"
    assert not s.is_terminal
    assert s.model_extra and s.model_extra["priority"] == "high"
    assert s.error is not None and s.error.code is SessionErrorCode.UNKNOWN
    reg = s.inference_checkpoints[0].registration
    assert reg is not None and reg.shape == "unknown" and not reg.is_registered


def _empty_page(p: Page[TrainingSession]) -> None:
    assert p.data == [] and p.next_cursor is None


def _last_page(p: Page[TrainingSession]) -> None:
    assert len(p.data) == 1 and p.next_cursor is None and p.meta.limit == 100


def _seed_page(p: Page[TrainingSession]) -> None:
    assert p.next_cursor == "123e4567-e89b-12d3-a456-426614174000" and len(p.data) == 1


def _ck_inference(c: Checkpoint) -> None:
    assert c.type is CheckpointType.INFERENCE and c.is_registered and c.step == 10


def _ck_unknown(c: Checkpoint) -> None:
    assert c.type is CheckpointType.UNKNOWN and not c.is_registered


def _download(d: CheckpointDownload) -> None:
    assert [f.size for f in d.data] == [123456789, 611]


def _resource_ready(r: ModelResource) -> None:
    assert r.status is ModelResourceStatus.READY and r.inactive_timeout == 3600
    assert r.compute_config is not None and r.compute_config.gpu_type == "B200-SXM"


def _resource_queued(r: ModelResource) -> None:
    assert r.status_details is not None and r.status_details.queue_position == 3


def _op_checkpoint(o: Operation) -> None:
    assert o.is_done and o.checkpoint is not None and o.checkpoint.is_registered


def _op_failed(o: Operation) -> None:
    assert o.status is OperationStatus.FAILED and o.is_done
    assert o.error is not None and o.error.code == "TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS"


def _op_unknown(o: Operation) -> None:
    assert o.status is OperationStatus.UNKNOWN and not o.is_done and o.error and not o.error.code


EXPECTATIONS: dict[str, Callable[[Any], None]] = {
    "session__seed_get_legacy_registration.json": _legacy,
    "session__aug2026_object_ids.json": _object_ids,
    "session__current_sdk.json": _current,
    "session__int64_as_strings.json": _int64,
    "session__null_and_empty_blocks.json": _nulls,
    "session__unknown_values_and_fields.json": _unknown,
    "session_page__empty_omits_data_and_meta.json": _empty_page,
    "session_page__null_data.json": _empty_page,
    "session_page__last_page_empty_cursor.json": _last_page,
    "session_page__seed_list_old.json": _seed_page,
    "session_page__seed_list_new.json": _seed_page,
    "checkpoint__inference_current.json": _ck_inference,
    "checkpoint__unknown_type_minimax_unregistered.json": _ck_unknown,
    "checkpoint_download__adapter.json": _download,
    "model_resource__ready.json": _resource_ready,
    "model_resource__pending_in_queue.json": _resource_queued,
    "model_resource__unknown_status.json": lambda r: r.status is ModelResourceStatus.UNKNOWN,
    "cost_estimate__string_price.json": lambda c: c.price_per_hour == 7.25,
    "supported_models.json": lambda p: [m.base_model for m in p.data][1] == "MiniMaxAI/MiniMax-M3",
    "operation__inference_checkpoint_completed.json": _op_checkpoint,
    "operation__legacy_inference_checkpoint_result.json": lambda o: o.checkpoint is None,
    "operation__failed_non_finite_loss.json": _op_failed,
    "operation__unknown_status_error_without_code.json": _op_unknown,
}


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_payload_reads_as_expected(name: str) -> None:
    result = EXPECTATIONS[name](load(name))
    assert result is None or result is True


def test_the_three_registration_shapes_normalise_to_the_same_fields() -> None:
    shapes = [
        ("session__seed_get_legacy_registration.json", "legacy"),
        ("session__aug2026_object_ids.json", "object_ids"),
        ("session__current_sdk.json", "current"),
    ]
    for name, shape in shapes:
        reg = load(name).inference_checkpoints[0].registration
        assert reg.shape == shape and reg.is_registered and reg.deployable_model


ERROR_EXPECTED = {
    "error__together_error_data.json": (
        "authentication_error",
        "invalid_api_key",
        "Invalid API key",
    ),
    "error__without_code.json": ("invalid_request_error", None, "limit must be between 1 and 100"),
    "error__grpc_status.json": ("NOT_FOUND", "5", "training session not found"),
    "error__grpc_status_string_code.json": (
        "RESOURCE_EXHAUSTED",
        "RESOURCE_EXHAUSTED",
        "quota exceeded",
    ),
    "error__string_error.json": (None, "503", "upstream unavailable"),
}


@pytest.mark.parametrize("path", ERROR_BODIES, ids=lambda p: p.stem)
def test_every_error_body_parses(path: Path) -> None:
    assert parse_error_body(path.read_bytes()) == ERROR_EXPECTED[path.name]
