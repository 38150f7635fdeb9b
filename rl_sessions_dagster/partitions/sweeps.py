"""The sweep partitions (one per sweep, the champion's) and how a checkpoint finds its sweep:
from the W&B group and display name the event sensor recorded on the checkpoint asset."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from ..core.sweeps import sweep_name
from .checkpoints import CHECKPOINT_ASSET_KEY

SWEEP_PARTITIONS_NAME = "together_rl_sweeps"
SWEEP_PARTITIONS = dg.DynamicPartitionsDefinition(name=SWEEP_PARTITIONS_NAME)
CHAMPION_ASSET_KEY = dg.AssetKey(["together", "sweep_champion"])
#: The built-in evaluation's key, which the champion and the report read by default.
EVALUATION_ASSET_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])


def metadata_value(meta: Mapping[str, Any], name: str) -> Any:
    """The plain value of a metadata entry (None when absent)."""
    v = meta.get(name)
    return v.value if isinstance(v, dg.MetadataValue) else v


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
    """The sweep of each checkpoint partition (:func:`~.core.sweeps.sweep_name`, as spend
    groups sessions), from the W&B group and display name the event sensor recorded on the
    checkpoint asset, else from the partition's session label."""
    meta = latest_metadata(instance, checkpoint_asset_key, sorted(set(partitions)))
    out = {}
    for p in partitions:
        m = meta.get(p, {})
        name = metadata_value(m, "display_name") or (p.split("/")[0] if "/" in p else None)
        out[p] = sweep_name(metadata_value(m, "wandb_group"), name, separator)
    return out
