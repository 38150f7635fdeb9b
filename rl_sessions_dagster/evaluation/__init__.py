"""Checkpoint evaluation without Dagster: datasets, graders and a concurrent runner.

``EvaluationSpec(...).load()`` validates everything eagerly; :func:`run_evaluation` asks a
model (through :meth:`RLSessionsClient.chat_completion
<rl_sessions_dagster.api.RLSessionsClient.chat_completion>`) and grades the answers. The
Dagster asset around it is :func:`rl_sessions_dagster.assets.build_evaluation_asset`.
"""

from .dataset import Dataset
from .graders import Grader
from .runner import EvaluationResult
from .spec import EvaluationSpec

__all__ = [
    "Dataset",
    "EvaluationResult",
    "EvaluationSpec",
    "Grader",
]
