"""What the sensors and the assets both need: the checkpoint partitions, their keys, and the
metadata a person wants on a checkpoint's page.

A neutral module so that ``sensors/`` and ``assets/`` never import each other.

Partition keys are readable and sortable: ``<session name>/<step, 6 digits>/<checkpoint id>``
(e.g. ``sweep-lr-1e-5/000020/6b65a6a4-...``). On the partitions page and in the metadata plots
a person sees session and step without clicking; sorting by key groups a session's checkpoints
in step order; the full checkpoint id at the end keeps keys unique (two sessions may share a
name) and lets :func:`checkpoint_id_from_partition_key` recover the id with no lookup.
Partitions added by release 0.1.0 are bare checkpoint ids; the same function reads them.
"""

import re

import dagster as dg

from .api.models import InferenceCheckpoint, TrainingSession

CHECKPOINT_PARTITIONS_NAME = "together_rl_checkpoints"
CHECKPOINT_PARTITIONS = dg.DynamicPartitionsDefinition(name=CHECKPOINT_PARTITIONS_NAME)
CHECKPOINT_ASSET_KEY = dg.AssetKey(["together", "rl_inference_checkpoint"])

_LABEL_MAX = 60
_UNSAFE = re.compile(
    r"[^\w.@+=:-]+"
)  # "/" is the separator; ",", "[", "]", spaces confuse UI input
_DOTS = re.compile(r"\.{2,}")  # "..." is Dagster's partition range syntax


def session_label(session: TrainingSession) -> str:
    """The session's display name made safe for a partition key, or ``session-<id prefix>``."""
    name = _DOTS.sub(".", _UNSAFE.sub("-", session.display_name or "")).strip("-.")
    return name[:_LABEL_MAX] or f"session-{session.id[:8]}"


def checkpoint_partition_key(session: TrainingSession, checkpoint: InferenceCheckpoint) -> str:
    """``<session label>/<step:06d>/<checkpoint id>``: readable, sortable, unique, stable."""
    step = f"{checkpoint.step:06d}" if checkpoint.step is not None else "nostep"
    return f"{session_label(session)}/{step}/{checkpoint.id}"


def checkpoint_id_from_partition_key(partition_key: str) -> str:
    """The checkpoint id in a partition key; also accepts the bare ids keyed by 0.1.0."""
    return partition_key.rsplit("/", 1)[-1]


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
