"""Registration → deployment target, and download URL choice, against the simulator over HTTP.

The simulator serves each registered checkpoint on its chat endpoint under exactly the names
its registration exposes, so ``world.chat_model(target.inference_model)`` is an independent
check that the name we would send as ``model`` really reaches that checkpoint.
"""

from typing import Any

import pytest

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.api.checkpoints import (
    CheckpointNotDownloadableError,
    CheckpointNotRegisteredError,
    choose_variant,
    deployment_target,
    download_urls,
)
from rl_sessions_dagster.api.enums import CheckpointVariant
from rl_sessions_dagster.api.models import Registration
from rl_sessions_dagster.testing import RLSimulator

DOWNLOAD = "/v1/rl/checkpoints/{id}/download"
ADAPTER_FILES = ["adapter_config.json", "adapter_model.safetensors"]
MERGED_FILES = ["config.json", "model.safetensors"]


def one_checkpoint(sim: RLSimulator, **session_kwargs: Any) -> tuple[str, str]:
    sid = sim.world.create_session(**session_kwargs)
    return sid, sim.world.add_inference_checkpoint(sid, step=10)


@pytest.mark.parametrize(
    ("shape", "lora", "kind", "name_field"),
    [
        ("current", True, "adapter", "adapter_id"),
        ("current", False, "model", "model_id"),
        ("object_ids", True, "adapter", "adapter_id"),
        ("object_ids", False, "model", "model_id"),
        ("legacy", True, "legacy", "legacy_model_name"),
    ],
)
def test_each_registration_shape_gives_a_servable_target(
    sim: RLSimulator, client: RLSessionsClient, shape: str, lora: bool, kind: str, name_field: str
) -> None:
    sid, ck_id = one_checkpoint(sim, registration_shape=shape, lora=lora)
    (embedded,) = client.get_session(sid).inference_checkpoints
    target = deployment_target(embedded)
    assert (target.checkpoint_id, target.kind, target.shape) == (ck_id, kind, shape)
    assert target.inference_model == getattr(target, name_field)
    assert target.is_deployable
    served = sim.world.chat_model(target.inference_model or "")
    assert served is not None and served[0] == ck_id
    # The /v1/rl/checkpoints view of the same checkpoint gives the same target.
    assert deployment_target(client.get_checkpoint(ck_id)) == target
    if shape != "legacy":
        assert target.registry_id and target.registry_id.startswith("ml_")
        assert target.registry_revision_id and target.registry_revision_id.startswith("rv_")


def test_object_ids_shape_keeps_every_name() -> None:
    """Aug-2026 payloads carry the merged model, the adapter and the legacy name at once."""
    reg = Registration.model_validate(
        {
            "model_name": "u/m-step-1",
            "registered_at": "2026-08-20T00:00:00Z",
            "model_object_id": "ml_m",
            "model_object_revision_id": "rv_m",
            "adapter_object_id": "ml_a",
            "adapter_object_revision_id": "rv_a",
        }
    )
    target = deployment_target(reg)
    assert (target.kind, target.inference_model, target.checkpoint_id) == ("adapter", "ml_a", None)
    assert (target.model_id, target.legacy_model_name) == ("ml_m", "u/m-step-1")
    assert (target.registry_id, target.registry_revision_id) == ("ml_a", "rv_a")


def test_unregistered_checkpoints_raise_a_clear_error(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    never = sim.world.create_session(registration_shape=None)
    never_ck = sim.world.add_inference_checkpoint(never)
    lagging = sim.world.create_session()
    lagging_ck = sim.world.add_inference_checkpoint(lagging, registered=False)
    for sid, ck_id in ((never, never_ck), (lagging, lagging_ck)):
        (embedded,) = client.get_session(sid).inference_checkpoints
        with pytest.raises(CheckpointNotRegisteredError, match="cannot be deployed") as info:
            deployment_target(embedded)
        assert info.value.checkpoint_id == ck_id and ck_id in str(info.value)
        assert "download_urls()" in str(info.value)
        with pytest.raises(CheckpointNotRegisteredError):
            deployment_target(client.get_checkpoint(ck_id))
        empty = deployment_target(embedded, required=False)
        assert (empty.kind, empty.inference_model, empty.is_deployable) == (None, None, False)
    # Once registration lands, the same checkpoint resolves.
    sim.world.register_checkpoint(lagging_ck)
    (embedded,) = client.get_session(lagging).inference_checkpoints
    assert deployment_target(embedded).kind == "adapter"
    with pytest.raises(CheckpointNotRegisteredError, match="has no registration"):
        deployment_target(None)


def test_training_checkpoints_are_not_deployable(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    tr = sim.world.add_training_checkpoint(sid)
    with pytest.raises(CheckpointNotRegisteredError, match="TRAINING"):
        deployment_target(client.get_checkpoint(tr))
    with pytest.raises(CheckpointNotRegisteredError, match="TRAINING"):
        deployment_target(client.get_checkpoint(tr), required=False)
    with pytest.raises(CheckpointNotDownloadableError, match="TRAINING"):
        download_urls(client, tr)
    assert sim.requests.count("GET", DOWNLOAD) == 0
    with pytest.raises(TypeError):
        deployment_target("ck-id")  # type: ignore[arg-type]


def test_download_picks_adapter_for_lora_and_merged_for_full_weights(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    _, lora_ck = one_checkpoint(sim, lora=True)
    _, full_ck = one_checkpoint(sim, lora=False)
    sim.requests.reset()
    files = download_urls(client, lora_ck)
    assert [f.filename for f in files] == ADAPTER_FILES
    assert all(f.url.startswith("http") and f.size for f in files)
    assert [f.filename for f in download_urls(client, full_ck)] == MERGED_FILES
    variants = {r.param("variant") for r in sim.requests.records("GET", DOWNLOAD)}
    assert variants == {CheckpointVariant.ADAPTER.value, CheckpointVariant.MERGED.value}
    # An id costs one metadata read plus the download; a Checkpoint already read, one request.
    assert sim.requests.count("GET", "/v1/rl/checkpoints/{id}") == 2
    checkpoint = client.get_checkpoint(lora_ck)
    sim.requests.reset()
    download_urls(client, checkpoint)
    assert len(sim.requests) == 1


def test_explicit_variants_and_their_errors(sim: RLSimulator, client: RLSessionsClient) -> None:
    _, lora_ck = one_checkpoint(sim, lora=True)
    _, full_ck = one_checkpoint(sim, lora=False)
    merged = download_urls(client, lora_ck, "MERGED")
    assert [f.filename for f in merged] == MERGED_FILES
    sim.requests.reset()
    with pytest.raises(CheckpointNotDownloadableError, match="no ADAPTER variant") as info:
        download_urls(client, full_ck, CheckpointVariant.ADAPTER)
    assert info.value.checkpoint_id == full_ck
    assert sim.requests.count("GET", DOWNLOAD) == 0  # refused before asking the API
    with pytest.raises(ValueError, match="unknown checkpoint variant"):
        download_urls(client, full_ck, "QUANTIZED")


def test_lora_on_custom_weights_deploys_merged_but_downloads_the_adapter(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    """LoRA on ``base_weights_ref`` registers a merged model, yet the adapter still exists."""
    rid = sim.world.create_model_resource(lora=True, base_weights_ref="ml_custom_base")
    sid = sim.world.create_session(rid)
    ck_id = sim.world.add_inference_checkpoint(sid)
    checkpoint = client.get_checkpoint(ck_id)
    assert deployment_target(checkpoint).kind == "model"
    assert choose_variant(checkpoint) is CheckpointVariant.ADAPTER
    assert [f.filename for f in download_urls(client, checkpoint)] == ADAPTER_FILES


def test_unregistered_checkpoints_can_still_be_downloaded(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session(registration_shape=None, lora=False)
    ck_id = sim.world.add_inference_checkpoint(sid)
    assert [f.filename for f in download_urls(client, ck_id)] == MERGED_FILES
