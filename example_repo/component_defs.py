"""The example project configured with the YAML Component (what the demo runs).

``defs/together_rl/defs.yaml`` declares the resource, the checkpoint asset, one routed sensor
(checkpoint evaluation and session reports from one poll of the API), the built-in session
report, the sweep champion, the sync table and the GPU side: model-resource events routed to
``gpu_notices``, the idle guard (acting) and the spend asset. The evaluation asset is Python,
in :mod:`example_repo.definitions`; ``gpu_notices`` in :mod:`example_repo.gpus`;
``champion_deploy`` (run once per champion change) in :mod:`example_repo.champion`.
In a project made
by ``create-dagster`` the same YAML goes under ``src/<project>/defs/`` and ``dg`` loads it;
here the repository is not a dg project, so the defs folder is loaded explicitly.

Environment: ``TOGETHER_API_KEY`` (required at run time), ``TOGETHER_BASE_URL`` (optional),
``RL_SENSOR_INTERVAL_SECONDS`` (default 30), ``RL_IDLE_SECONDS`` (default 1800). Loading makes
no API call.
"""

from pathlib import Path

import dagster as dg

from . import defs as defs_folder
from .champion import champion_deploy
from .definitions import checkpoint_evaluation
from .gpus import gpu_notices

defs = dg.Definitions.merge(
    dg.ComponentTree.from_module(
        defs_module=defs_folder, project_root=Path(__file__).resolve().parents[1]
    ).build_defs(),
    dg.Definitions(assets=[checkpoint_evaluation, gpu_notices, champion_deploy]),
)
