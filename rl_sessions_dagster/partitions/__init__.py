"""What the sensors and the assets both need, so that neither imports the other: the
partitions, a checkpoint's partition key and page metadata, and the job types."""

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import dagster as dg

from ..api.models import InferenceCheckpoint, TrainingSession
from ..core.sweeps import sweep_name

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_PARTITIONS",
    "SWEEP_PARTITIONS",
    "checkpoint_id_for_partition",
]

CHECKPOINT_PARTITIONS_NAME = "together_rl_checkpoints"
CHECKPOINT_PARTITIONS = dg.DynamicPartitionsDefinition(name=CHECKPOINT_PARTITIONS_NAME)
CHECKPOINT_ASSET_KEY = dg.AssetKey(["together", "rl_inference_checkpoint"])
SWEEP_PARTITIONS = dg.DynamicPartitionsDefinition(name="together_rl_sweeps")
CHAMPION_ASSET_KEY = dg.AssetKey(["together", "sweep_champion"])
#: The built-in evaluation's key, which the champion and the report read by default.
EVALUATION_ASSET_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])

#: What ``define_asset_job`` returns; its class is not public in ``dagster``, hence Any.
AssetJob: TypeAlias = Any
Job: TypeAlias = "dg.JobDefinition | dg.GraphDefinition | AssetJob"
Assets: TypeAlias = (
    "dg.AssetSelection | str | Sequence[str] | Sequence[dg.AssetKey]"
    " | Sequence[dg.AssetsDefinition | dg.SourceAsset]"
)

# Keys read ``<session name>/<step, 6 digits>/<checkpoint id[:8]>``: session and step seen
# without clicking, in step order, short enough for the UI (which cuts long keys in the middle).
_LABEL_MAX = 60
_UNSAFE = re.compile(r"[^\w.@+=:-]+")  # "/" separates; ",", "[", "]", spaces confuse UI input
_DOTS = re.compile(r"\.{2,}")  # "..." is Dagster's partition range syntax


def session_label(session: TrainingSession) -> str:
    """The session's display name made safe for a partition key, or ``session-<id prefix>``."""
    name = _DOTS.sub(".", _UNSAFE.sub("-", session.display_name or "")).strip("-.")
    return name[:_LABEL_MAX] or f"session-{session.id[:8]}"


def checkpoint_partition_key(session: TrainingSession, checkpoint: InferenceCheckpoint) -> str:
    step = f"{checkpoint.step:06d}" if checkpoint.step is not None else "nostep"
    return f"{session_label(session)}/{step}/{checkpoint.id[:8]}"


class CheckpointPartitionError(LookupError):
    """A partition key whose checkpoint id is neither in a run tag nor in a recorded event."""


def checkpoint_id_for_partition(
    context: dg.AssetExecutionContext | dg.OpExecutionContext,
    partition_key: str | None = None,
    *,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
) -> str:
    """The checkpoint id of a partition (default: the run's): a key without ``/``, else the run's
    ``together/checkpoint_id`` tag, else the asset's recorded id (UI re-runs, backfills)."""
    key = partition_key if partition_key is not None else context.partition_key
    if "/" not in key:
        return key
    tags = context.run.tags
    if tags.get("dagster/partition") == key and tags.get("together/checkpoint_id"):
        return tags["together/checkpoint_id"]
    meta = latest_metadata(context.instance, checkpoint_asset_key, [key]).get(key, {})
    if isinstance(value := metadata_value(meta, "checkpoint_id"), str):
        return value
    raise CheckpointPartitionError(
        f"no checkpoint id recorded for partition {key!r}: it comes from the run's "
        f"together/checkpoint_id tag or the {checkpoint_asset_key.to_user_string()} "
        "materialization the sensor records (checkpoint_asset_key must not be None)"
    )


_REGISTRATION_FIELDS = "model_id model_revision_id adapter_id adapter_revision_id legacy_model_name"


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
    for name in ("display_name", "base_model"):
        if value := getattr(session, name):
            meta[name] = dg.MetadataValue.text(value)
    if checkpoint.created_at is not None:
        meta["created_at"] = dg.MetadataValue.timestamp(checkpoint.created_at)
    if reg is not None:
        for name in _REGISTRATION_FIELDS.split():
            if value := getattr(reg, name):
                meta[name] = dg.MetadataValue.text(value)
        if reg.deployable_model:
            meta["model_name"] = dg.MetadataValue.text(reg.deployable_model)
    if session.wandb_url:
        meta["wandb_url"] = dg.MetadataValue.url(session.wandb_url)
    wandb = session.metadata.wandb
    if wandb is not None and wandb.group:  # with display_name: the sweep (core/sweeps.py)
        meta["wandb_group"] = dg.MetadataValue.text(wandb.group)
    return meta


def metadata_value(meta: Mapping[str, Any], name: str) -> Any:
    """The plain value of a metadata entry (None when absent)."""
    v = meta.get(name)
    return v.value if isinstance(v, dg.MetadataValue) else v


def metadata_table(
    columns: Mapping[str, str | tuple[str, str]], rows: Iterable[Sequence[Any] | Mapping[str, Any]]
) -> dg.MetadataValue:
    """A table the UI renders: ``columns`` maps a name to a type or (type, description)."""
    schema = [dg.TableColumn(n, *((t,) if isinstance(t, str) else t)) for n, t in columns.items()]
    records = [
        dg.TableRecord(dict(r) if isinstance(r, Mapping) else dict(zip(columns, r, strict=True)))
        for r in rows
    ]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(schema))


_BARS = "▁▂▃▄▅▆▇█"


def score_line(points: Iterable[tuple[int, float]]) -> str:
    """Scores by step as one line (``▂▅▇ 0.400 → 0.900, steps 20-60``): Dagster's plot of a
    key spans every partition, so one session's scores break up there beside other sessions."""
    ordered = sorted(points)
    if not ordered:
        return ""
    values = [v for _, v in ordered]
    low, span = min(values), (max(values) - min(values)) or 1.0
    bars = "".join(_BARS[round((v - low) / span * (len(_BARS) - 1))] for v in values)
    first, last = ordered[0][0], ordered[-1][0]
    steps = f"step {first}" if len(ordered) == 1 else f"steps {first}-{last}"
    return f"{bars} {values[0]:.3f} → {values[-1]:.3f}, {steps}"


def latest_metadata(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Each partition's latest materialization metadata, in one query."""
    if not partitions:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=list(partitions)),
        limit=len(partitions) * 4,
    ).records
    out: dict[str, dict[str, Any]] = {}
    for record in records:  # newest first
        mat = record.asset_materialization
        if mat is not None and mat.partition and mat.partition not in out:
            out[mat.partition] = dict(mat.metadata)
    return out


def checkpoint_sweeps(
    instance: dg.DagsterInstance,
    partitions: Sequence[str],
    *,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
    separator: str = "-",
) -> dict[str, str]:
    """Each checkpoint partition's sweep as spend groups sessions, from its recorded metadata."""
    meta = latest_metadata(instance, checkpoint_asset_key, sorted(set(partitions)))
    out = {}
    for p in partitions:
        m = meta.get(p, {})
        name = metadata_value(m, "display_name") or (p.split("/")[0] if "/" in p else None)
        out[p] = sweep_name(metadata_value(m, "wandb_group"), name, separator)
    return out
