"""``champion_baseline``: the sweep's champion as a baseline of the evaluation's score check.

The champion itself (asset spec and sensor) is built in :mod:`..sensors.champion`; this reads
the latest materialization of the checkpoint's sweep partition.
"""

import dagster as dg

from ..partitions import (
    CHAMPION_ASSET_KEY,
    CHECKPOINT_ASSET_KEY,
    checkpoint_sweeps,
    latest_metadata,
    metadata_value,
)
from .evaluation import Baseline, BaselineFinder, EvaluatedCheckpoint

__all__ = ["champion_baseline"]


def champion_baseline(
    key: dg.AssetKey = CHAMPION_ASSET_KEY,
    *,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
    separator: str = "-",
) -> BaselineFinder:
    """A baseline for the evaluation's score check: the champion of the checkpoint's sweep
    (when it is another checkpoint and its metric is ``score``, higher is better)."""

    def _champion(
        context: dg.AssetExecutionContext, _: dg.AssetKey, current: EvaluatedCheckpoint
    ) -> Baseline | None:
        instance = context.instance
        partition = current.partition_key
        sweep = checkpoint_sweeps(
            instance, [partition], checkpoint_asset_key=checkpoint_asset_key, separator=separator
        )[partition]
        meta = latest_metadata(instance, key, [sweep]).get(sweep)
        if not meta or metadata_value(meta, "metric") != "score":
            return None
        if metadata_value(meta, "direction") != "higher":
            return None
        score = metadata_value(meta, "score")
        champion = metadata_value(meta, "champion_partition")
        if not isinstance(score, float) or not champion or champion == partition:
            return None
        step = metadata_value(meta, "step")
        return Baseline("sweep champion", score, champion, step if isinstance(step, int) else None)

    return _champion
