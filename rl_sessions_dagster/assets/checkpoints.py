"""The inference-checkpoint asset: one dynamic partition per checkpoint.

The sensors add a partition for each checkpoint they announce and record a runless
materialization of this external asset, so a user's evaluation asset can depend on it and be
driven either by the sensor's runs or by ``AutomationCondition.eager()``.
"""

from collections.abc import Sequence

import dagster as dg

from ..api.models import InferenceCheckpoint, TrainingSession

CHECKPOINT_PARTITIONS_NAME = "together_rl_checkpoints"
CHECKPOINT_PARTITIONS = dg.DynamicPartitionsDefinition(name=CHECKPOINT_PARTITIONS_NAME)
CHECKPOINT_ASSET_KEY = dg.AssetKey(["together", "rl_inference_checkpoint"])


def checkpoint_partition_key(checkpoint: InferenceCheckpoint) -> str:
    """The partition key of a checkpoint: its id (unique, stable, and free of '...')."""
    return checkpoint.id


def build_checkpoint_asset_spec(
    key: dg.AssetKey | str | Sequence[str] = CHECKPOINT_ASSET_KEY,
    *,
    partitions_def: dg.DynamicPartitionsDefinition = CHECKPOINT_PARTITIONS,
    group_name: str | None = "together_rl",
    owners: Sequence[str] | None = None,
    description: str | None = None,
) -> dg.AssetSpec:
    """An external, partitioned ``AssetSpec`` for inference checkpoints, ready to be upstream."""
    return dg.AssetSpec(
        key=dg.AssetKey.from_coercible(key),
        description=description
        or (
            "Inference checkpoints saved by Together AI RL training sessions, one partition "
            "per checkpoint. Materialized (runless) by the rl_sessions_dagster sensors."
        ),
        partitions_def=partitions_def,
        group_name=group_name,
        owners=list(owners) if owners else None,
        kinds={"together", "rl"},
    )


CHECKPOINT_ASSET_SPEC = build_checkpoint_asset_spec()


def checkpoint_metadata(
    session: TrainingSession, checkpoint: InferenceCheckpoint
) -> dict[str, dg.MetadataValue]:
    """What a person wants on the partition's page: step, ids, registration, W&B link."""
    reg = checkpoint.registration
    meta: dict[str, dg.MetadataValue] = {
        "session_id": dg.MetadataValue.text(session.id),
        "checkpoint_id": dg.MetadataValue.text(checkpoint.id),
        "registered": dg.MetadataValue.bool(checkpoint.is_registered),
    }
    if checkpoint.step is not None:
        meta["step"] = dg.MetadataValue.int(checkpoint.step)
    if session.display_name:
        meta["display_name"] = dg.MetadataValue.text(session.display_name)
    if session.base_model:
        meta["base_model"] = dg.MetadataValue.text(session.base_model)
    if checkpoint.created_at is not None:
        meta["created_at"] = dg.MetadataValue.timestamp(checkpoint.created_at)
    if reg is not None:
        for name in (
            "model_id",
            "model_revision_id",
            "adapter_id",
            "adapter_revision_id",
            "legacy_model_name",
        ):
            value = getattr(reg, name)
            if value:
                meta[name] = dg.MetadataValue.text(value)
        if reg.deployable_model:
            meta["model_name"] = dg.MetadataValue.text(reg.deployable_model)
    if session.wandb_url:
        meta["wandb_url"] = dg.MetadataValue.url(session.wandb_url)
    return meta
