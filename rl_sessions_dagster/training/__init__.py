"""Launch a training session from Dagster, stopped (with its resource, when created for the
run) however the run ends: :func:`launched_session` as a context manager, or
:func:`build_training_op` around a user's training function."""

from .op import TrainingLaunchConfig, build_training_op
from .session import LaunchedSession, launched_session

__all__ = [
    "LaunchedSession",
    "TrainingLaunchConfig",
    "build_training_op",
    "launched_session",
]
