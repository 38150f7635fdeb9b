"""Checkpoint evaluation without Dagster: datasets, graders and a concurrent runner.

``EvaluationSpec(...).load()`` validates everything eagerly; :func:`run_evaluation` asks a
model (through :meth:`RLSessionsClient.chat_completion
<rl_sessions_dagster.api.RLSessionsClient.chat_completion>`) and grades the answers. The
Dagster asset around it is :func:`rl_sessions_dagster.assets.build_evaluation_asset`.
"""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .dataset import Dataset as Dataset
    from .dataset import DatasetError as DatasetError
    from .dataset import EvalItem as EvalItem
    from .dataset import load_dataset as load_dataset
    from .graders import Grade as Grade
    from .graders import Grader as Grader
    from .graders import GraderSpec as GraderSpec
    from .graders import Verdict as Verdict
    from .graders import build_grader as build_grader
    from .runner import EvaluationFailed as EvaluationFailed
    from .runner import EvaluationResult as EvaluationResult
    from .runner import ItemResult as ItemResult
    from .runner import RunSettings as RunSettings
    from .runner import percentile as percentile
    from .runner import run_evaluation as run_evaluation
    from .spec import EvaluationSpec as EvaluationSpec
    from .spec import LoadedEvaluation as LoadedEvaluation

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
