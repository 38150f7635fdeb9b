"""The types of what a sensor or schedule runs, spelled once for ``sensors/`` and ``assets/``."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import dagster as dg

if TYPE_CHECKING:
    # The one private Dagster import of the glue's annotations: the type ``define_asset_job``
    # returns, which ``dagster`` does not export. Annotations only, never imported at run time.
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )

#: What ``define_asset_job`` returns: an asset job, resolved when the definitions load.
AssetJob: TypeAlias = "UnresolvedAssetJobDefinition"
#: A job a sensor or schedule can target: a job, a graph, or an asset job.
Job: TypeAlias = "dg.JobDefinition | dg.GraphDefinition | UnresolvedAssetJobDefinition"
#: An asset selection as Dagster takes it: a selection, a selection string, or assets and keys.
Assets: TypeAlias = (
    "dg.AssetSelection | str | Sequence[str] | Sequence[dg.AssetKey]"
    " | Sequence[dg.AssetsDefinition | dg.SourceAsset]"
)
