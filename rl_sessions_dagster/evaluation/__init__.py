"""Checkpoint evaluation without Dagster: datasets, graders and a concurrent runner.

``EvaluationSpec(...).load()`` validates everything eagerly; :func:`run_evaluation` asks a
model (through :meth:`RLSessionsClient.chat_completion
<rl_sessions_dagster.api.RLSessionsClient.chat_completion>`) and grades the answers. The
Dagster asset around it is :func:`rl_sessions_dagster.assets.build_evaluation_asset`.
"""

from .dataset import Dataset, DatasetError, EvalItem, load_dataset
from .graders import Grade, Grader, GraderSpec, Verdict, resolve_grader
from .runner import (
    EvaluationFailed,
    EvaluationResult,
    ItemResult,
    RunSettings,
    percentile,
    run_evaluation,
)
from .spec import EvaluationSpec, LoadedEvaluation

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalItem",
    "EvaluationFailed",
    "EvaluationResult",
    "EvaluationSpec",
    "Grade",
    "Grader",
    "GraderSpec",
    "ItemResult",
    "LoadedEvaluation",
    "RunSettings",
    "Verdict",
    "load_dataset",
    "percentile",
    "resolve_grader",
    "run_evaluation",
]
