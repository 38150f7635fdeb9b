"""Typed operation results and the SDK 3.1.1 shapes around them.

Fixture files follow ``together/types/post_training/`` (``*_result.py``, ``sampled_sequence.py``,
``optimizer_config.py``, ``rl_supported_model.py``, the error-code literals), with int64 and
float values sent as strings where the wire may do so. The end-to-end tests submit each
operation kind to the simulator and read its result over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rl_sessions_dagster.api import (
    InferenceCheckpoint,
    ModelResource,
    Page,
    RetryPolicy,
    RLSessionsClient,
    TrainingSession,
)
from rl_sessions_dagster.api.enums import (
    ModelResourceErrorCode,
    MuonScalingStrategy,
    OperationErrorCode,
    OperationStatus,
    StopReason,
    WeightSyncType,
)
from rl_sessions_dagster.api.models import LoraConfig, SupportedModel, TrainingCheckpoint
from rl_sessions_dagster.api.operations import (
    ForwardBackwardResult,
    InferenceCheckpointResult,
    Operation,
    OptimStepResult,
    SampleOutput,
    TrainingCheckpointResult,
    WeightsSyncResult,
)
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY

FIXTURES = Path(__file__).parent / "fixtures"


def op(name: str, kind: str | None) -> Operation:
    operation = Operation.model_validate_json((FIXTURES / name).read_bytes())
    operation.kind = kind  # set by the client from the URL; the wire does not carry it
    return operation


# -- fixtures ------------------------------------------------------------------------------------


def test_a_training_checkpoint_operation_yields_a_training_checkpoint() -> None:
    done = op("operation__training_checkpoint_completed.json", "training-checkpoint")
    ck = done.checkpoint
    assert isinstance(ck, TrainingCheckpoint) and ck.id == "tc-4" and ck.step == 4
    assert ck.registration is not None and ck.registration.id == "ml_train_state"
    assert isinstance(done.result, TrainingCheckpointResult) and done.result.checkpoint == ck
    # An inference checkpoint operation still yields an inference checkpoint.
    inference = op("operation__inference_checkpoint_completed.json", "inference-checkpoint")
    assert isinstance(inference.checkpoint, InferenceCheckpoint)
    assert isinstance(inference.result, InferenceCheckpointResult)


def test_forward_backward_numeric_strings_become_numbers() -> None:
    result = op("operation__forward_backward_string_numbers.json", "forward-backward").result
    assert isinstance(result, ForwardBackwardResult)
    assert result.loss == 0.731 and result.metrics == {"kl": 0.0125, "clip_fraction": 0.2}
    assert result.loss_fn_outputs is not None
    tensors = result.loss_fn_outputs[0].tensors
    assert tensors is not None and tensors["logprobs"].data == [-0.1, -0.25]
    assert tensors["logprobs"].shape == [2]


def test_optim_step_and_weights_sync_read_int64_strings() -> None:
    step = op("operation__optim_step_result_string_step.json", "optim-step").result
    assert isinstance(step, OptimStepResult) and step.step == 12
    sync = op("operation__weights_sync_string_version.json", "weights-sync").result
    assert isinstance(sync, WeightsSyncResult) and sync.weights_version == 7


def test_sample_sequences_logprobs_and_stop_reasons() -> None:
    result = op("operation__sample_completed.json", "sample").result
    assert isinstance(result, SampleOutput)
    (one,) = result.results
    first, second = one.sequences
    assert first.tokens == [151643, 12] and first.logprobs == [-0.5, -0.25]
    assert first.stop_reason is StopReason.STOP and first.prompt_cache_hit_tokens == 4
    assert second.stop_reason is StopReason.UNKNOWN
    assert second.raw_stop_reason == "STOP_REASON_TOOL_CALL"  # kept
    assert one.policy_segments is not None and [p.version for p in one.policy_segments] == [3, 4]
    assert one.prompt_logprobs == [0.0, -1.5]
    assert one.topk_prompt_logprobs is not None
    assert one.topk_prompt_logprobs[1].token_ids == [42, 7]


def test_results_need_a_known_kind_and_tolerate_a_drifted_field() -> None:
    assert op("operation__sample_completed.json", None).result is None
    assert op("operation__optim_step_pending.json", "optim-step").result is None
    drifted = Operation.model_validate({"id": "o", "output": {"loss": "NaN?", "metrics": {}}})
    drifted.kind = "forward-backward"
    result = drifted.result
    assert isinstance(result, ForwardBackwardResult) and result.loss is None
    assert result.metrics == {} and drifted.output == {"loss": "NaN?", "metrics": {}}


def test_error_codes_are_lenient_enums_that_keep_the_raw_code() -> None:
    failed = op("operation__failed_non_finite_loss.json", None)
    assert failed.error is not None and failed.error.code is OperationErrorCode.NON_FINITE_LOSS
    newer = op("operation__failed_unknown_error_code.json", None)
    assert newer.status is OperationStatus.FAILED and newer.error is not None
    assert newer.error.code is OperationErrorCode.UNKNOWN
    assert newer.error.code_raw == "TRAINING_OPERATION_ERROR_CODE_QUOTA_EXCEEDED"
    known = ModelResource.model_validate_json(
        (FIXTURES / "model_resource__error.json").read_bytes()
    )
    assert known.error is not None
    assert known.error.code is ModelResourceErrorCode.CAPACITY_WAIT_TIMEOUT
    path = FIXTURES / "model_resource__sdk_muon_optimizer.json"
    resource = ModelResource.model_validate_json(path.read_bytes())
    assert resource.error is not None and resource.error.code is ModelResourceErrorCode.UNKNOWN
    assert resource.error.code_raw == "MODEL_RESOURCES_ERROR_CODE_SPOT_RECLAIMED"


def test_optimizer_config_and_compute_config_are_typed() -> None:
    path = FIXTURES / "model_resource__sdk_muon_optimizer.json"
    resource = ModelResource.model_validate_json(path.read_bytes())
    assert resource.optimizer_config is not None and resource.optimizer_config.adam is None
    muon = resource.optimizer_config.muon
    assert muon is not None and muon.scaling_strategy is MuonScalingStrategy.MATCH_ADAM
    assert resource.inactive_timeout == 3600
    assert resource.compute_config is not None
    assert resource.compute_config.num_generator_replicas == 1
    adam = ModelResource.model_validate({"id": "r", "optimizer_config": {"adam": {}}})
    assert adam.optimizer_config is not None and adam.optimizer_config.adam is not None


def test_supported_models_compute_configs_are_typed() -> None:
    page = Page[SupportedModel].model_validate_json(
        (FIXTURES / "supported_models.json").read_bytes()
    )
    qwen, minimax = page.data
    assert qwen.compute_configs is not None and minimax.compute_configs is None
    (config,) = qwen.compute_configs
    assert config.gpu_type == "B200-SXM"
    assert config.generator_config is not None and config.generator_config.context_length == 32768
    defaults = config.generator_config.sampling_defaults
    assert defaults is not None and defaults.temperature == 1.0 and defaults.max_tokens == 1024
    trainer = config.trainer_config
    assert trainer is not None and trainer.lora is not None and trainer.full is not None
    assert trainer.lora.max_rank == 128 and trainer.full.max_batch_size == 32


def test_lora_alpha_is_an_int_like_the_sdk() -> None:
    path = FIXTURES / "session__sdk_lora_config.json"
    lora = TrainingSession.model_validate_json(path.read_bytes()).lora_config
    assert lora == LoraConfig(alpha=32, rank=16, dropout=0.05, seed=1234, train_unembed=True)
    assert isinstance(lora.alpha, int)
    assert LoraConfig.model_json_schema()["properties"]["alpha"]["anyOf"][0]["type"] == "integer"


def test_weight_sync_type_parses_short_full_and_new_values() -> None:
    assert WeightSyncType.parse("pipeline") is WeightSyncType.PIPELINE
    assert WeightSyncType.parse("WEIGHT_SYNC_TYPE_SYNCHRONOUS") is WeightSyncType.SYNCHRONOUS
    assert WeightSyncType.parse("WEIGHT_SYNC_TYPE_LATER") is WeightSyncType.UNKNOWN


# -- end to end, over HTTP -----------------------------------------------------------------------


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": KEY, "seed": 5}


@pytest.fixture
def client(sim: RLSimulator) -> Iterator[RLSessionsClient]:
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=RetryPolicy(max_attempts=1)) as c:
        yield c


def test_every_operation_kind_reads_its_typed_result(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session(int64_as_string=True)  # int64 values sent as strings

    def finish(submitted: Operation) -> Operation:
        assert submitted.kind is not None
        return client.wait_for_operation(sid, submitted.kind, submitted.id, poll_interval=0.01)

    fb = finish(client.forward_backward(sid, loss={"type": "cross_entropy"}, samples=[{}]))
    assert isinstance(fb.result, ForwardBackwardResult) and isinstance(fb.result.loss, float)
    assert fb.result.metrics is not None and set(fb.result.metrics) == {"kl", "clip_fraction"}
    step = finish(client.optim_step(sid))
    assert isinstance(step.result, OptimStepResult) and step.result.step == 1
    assert isinstance(step.output, dict) and step.output["step"] == "1"  # the raw wire value
    sync = finish(client.weights_sync(sid, weight_sync_type="synchronous"))  # a short name
    assert isinstance(sync.result, WeightsSyncResult) and sync.result.weights_version == 1
    policy = client.get_session(sid).policy_state  # sent as the full constant, so applied now
    assert policy is not None and policy.pending_publish is False
    finish(client.weights_sync(sid, weight_sync_type=WeightSyncType.BACKGROUND_PUBLISH))
    policy = client.get_session(sid).policy_state
    assert policy is not None and policy.pending_publish is True
    sample = finish(client.sample(sid, model_inputs=[{}], num_samples=2))
    assert isinstance(sample.result, SampleOutput)
    sequences = sample.result.results[0].sequences
    assert len(sequences) == 2 and all(s.stop_reason is StopReason.STOP for s in sequences)
    assert all(isinstance(t, int) for t in sequences[0].tokens)
    assert sequences[0].logprobs is not None and len(sequences[0].logprobs) == len(
        sequences[0].tokens
    )
    training = finish(client.create_training_checkpoint(sid))
    assert isinstance(training.checkpoint, TrainingCheckpoint)
    assert training.checkpoint.id in {c.id for c in client.get_session(sid).training_checkpoints}
    inference = finish(client.create_inference_checkpoint(sid))
    assert isinstance(inference.checkpoint, InferenceCheckpoint)
