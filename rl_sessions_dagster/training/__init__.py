"""Launch a training session from Dagster, stopped (with its resource, when created for the
run) however the run ends: :func:`launched_session` as a context manager, or
:func:`build_training_op` around a user's training function."""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .op import TrainingLaunchConfig as TrainingLaunchConfig
    from .op import build_training_op as build_training_op
    from .session import LaunchedSession as LaunchedSession
    from .session import launched_session as launched_session

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
