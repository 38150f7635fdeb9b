"""What the sensors and the assets both need: the checkpoint partitions and their keys, the
metadata on a checkpoint's page, and the sweep partitions of the champion.

A neutral package, so that ``sensors/`` and ``assets/`` never import each other.
"""

from .checkpoints import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS, checkpoint_id_for_partition
from .sweeps import SWEEP_PARTITIONS

__all__ = [
    "CHECKPOINT_ASSET_KEY",
    "CHECKPOINT_PARTITIONS",
    "SWEEP_PARTITIONS",
    "checkpoint_id_for_partition",
]
