"""The checkpoint partitions: one dynamic partition per inference checkpoint, its key, and the
metadata a person wants on a checkpoint's page.

Partition keys are readable and sortable: ``<session name>/<step, 6 digits>/<checkpoint id,
first 8 characters>`` (e.g. ``sweep-lr-1e-5/000020/6b65a6a4``). Short on purpose: the Dagster
UI cuts long partition keys in the middle, which would hide the step. On the partitions page
and in the metadata plots a person sees session and step without clicking; sorting by key
groups a session's checkpoints in step order; the short id keeps two checkpoints of same-named
sessions at the same step apart. The full id is in the run's ``together/checkpoint_id`` tag and
in the checkpoint asset's ``checkpoint_id`` metadata: :func:`checkpoint_id_for_partition` reads
it back.
"""

import re

import dagster as dg

from ..api.models import InferenceCheckpoint, TrainingSession

CHECKPOINT_PARTITIONS_NAME = "together_rl_checkpoints"
CHECKPOINT_PARTITIONS = dg.DynamicPartitionsDefinition(name=CHECKPOINT_PARTITIONS_NAME)
CHECKPOINT_ASSET_KEY = dg.AssetKey(["together", "rl_inference_checkpoint"])

_LABEL_MAX = 60
_UNSAFE = re.compile(
    r"[^\w.@+=:-]+"
)  # "/" is the separator; ",", "[", "]", spaces confuse UI input
_DOTS = re.compile(r"\.{2,}")  # "..." is Dagster's partition range syntax


def session_label(session: "TrainingSession") -> str:
    """The session's display name made safe for a partition key, or ``session-<id prefix>``."""
    name = _DOTS.sub(".", _UNSAFE.sub("-", session.display_name or "")).strip("-.")
    return name[:_LABEL_MAX] or f"session-{session.id[:8]}"


SHORT_ID_LENGTH = 8


def checkpoint_partition_key(session: "TrainingSession", checkpoint: "InferenceCheckpoint") -> str:
    """``<session label>/<step:06d>/<checkpoint id[:8]>``: readable, sortable, stable."""
    step = f"{checkpoint.step:06d}" if checkpoint.step is not None else "nostep"
    return f"{session_label(session)}/{step}/{checkpoint.id[:SHORT_ID_LENGTH]}"


class CheckpointPartitionError(LookupError):
    """A partition key whose checkpoint id cannot be found (no run tag, no recorded event)."""


def checkpoint_id_for_partition(
    context: dg.AssetExecutionContext | dg.OpExecutionContext,
    partition_key: str | None = None,
    *,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
) -> str:
    """The full checkpoint id of a partition (default: the run's).

    Reads, in order: a key without ``/`` as the id itself (a partition added by hand or by a
    test); the run's ``together/checkpoint_id``
    tag when the run is for this partition (every sensor run); the ``checkpoint_id`` metadata
    the sensor recorded on the checkpoint asset for this partition (UI re-runs, backfills,
    ``AutomationCondition.eager()``).
    """
    key = partition_key if partition_key is not None else context.partition_key
    if "/" not in key:
        return key
    tags = context.run.tags
    if tags.get("dagster/partition") == key and tags.get("together/checkpoint_id"):
        return tags["together/checkpoint_id"]
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=checkpoint_asset_key, asset_partitions=[key]), limit=1
    ).records
    mat = records[0].asset_materialization if records else None
    value = mat.metadata.get("checkpoint_id") if mat is not None else None
    if value is not None and isinstance(value.value, str):
        return value.value
    raise CheckpointPartitionError(
        f"no checkpoint id recorded for partition {key!r}: it comes from the run's "
        f"together/checkpoint_id tag or the {checkpoint_asset_key.to_user_string()} "
        "materialization the sensor records (checkpoint_asset_key must not be None)"
    )


def checkpoint_metadata(
    session: "TrainingSession", checkpoint: "InferenceCheckpoint"
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
    wandb = session.metadata.wandb
    if wandb is not None and wandb.group:  # with display_name: the sweep (core/sweeps.py)
        meta["wandb_group"] = dg.MetadataValue.text(wandb.group)
    return meta
