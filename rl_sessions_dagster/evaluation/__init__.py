"""Checkpoint evaluation without Dagster: datasets, graders and a concurrent runner; the asset
around it is :func:`rl_sessions_dagster.assets.build_evaluation_asset`."""

from .dataset import Dataset
from .graders import Grader
from .runner import EvaluationResult, EvaluationSpec

__all__ = ["Dataset", "EvaluationResult", "EvaluationSpec", "Grader"]
