"""Launch a training session from a Dagster op, stopped (with its resource, when created for
the run) however the run ends: ``with config.launch(context, together) as launched:``."""

from .session import LaunchedSession, TrainingLaunchConfig, launched_session

__all__ = ["LaunchedSession", "TrainingLaunchConfig", "launched_session"]
