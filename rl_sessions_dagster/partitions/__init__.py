"""What the sensors and the assets both need: the checkpoint partitions and their keys, the
metadata on a checkpoint's page, and the sweep partitions of the champion.

A neutral package, so that ``sensors/`` and ``assets/`` never import each other.
"""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .checkpoints import CHECKPOINT_ASSET_KEY as CHECKPOINT_ASSET_KEY
    from .checkpoints import CHECKPOINT_PARTITIONS as CHECKPOINT_PARTITIONS
    from .checkpoints import CHECKPOINT_PARTITIONS_NAME as CHECKPOINT_PARTITIONS_NAME
    from .checkpoints import SHORT_ID_LENGTH as SHORT_ID_LENGTH
    from .checkpoints import CheckpointPartitionError as CheckpointPartitionError
    from .checkpoints import checkpoint_id_for_partition as checkpoint_id_for_partition
    from .checkpoints import checkpoint_metadata as checkpoint_metadata
    from .checkpoints import checkpoint_partition_key as checkpoint_partition_key
    from .checkpoints import session_label as session_label
    from .sweeps import CHAMPION_ASSET_KEY as CHAMPION_ASSET_KEY
    from .sweeps import EVALUATION_ASSET_KEY as EVALUATION_ASSET_KEY
    from .sweeps import SWEEP_PARTITIONS as SWEEP_PARTITIONS
    from .sweeps import SWEEP_PARTITIONS_NAME as SWEEP_PARTITIONS_NAME
    from .sweeps import checkpoint_sweeps as checkpoint_sweeps
    from .sweeps import latest_metadata as latest_metadata
    from .sweeps import metadata_value as metadata_value

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
