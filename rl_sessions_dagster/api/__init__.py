"""Typed HTTP client for Together AI's RL (post-training) API. No Dagster in this package.

The names here are the client, its retry policy and clock, the objects a user meets first and
the base error. Everything else is imported from the module that defines it: the other models
and nested blocks (``api.models``), statuses and codes (``api.enums``), the error tree
(``api.errors``), waits and stops (``api.lifecycle``), saving checkpoints and reading their
registration (``api.checkpoints``), operations (``api.operations``), chat (``api.inference``)
and the supported-model catalogue (``api.catalog``).
"""

from ._http import API_KEY_ENV, DEFAULT_BASE_URL
from .client import RLSessionsClient
from .clock import ServerClock
from .enums import SessionStatus
from .errors import TogetherRLError
from .lifecycle import ResourceSpec
from .models import Checkpoint, InferenceCheckpoint, ModelResource, TrainingSession
from .pages import Page
from .retries import RetryPolicy

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "Checkpoint",
    "InferenceCheckpoint",
    "ModelResource",
    "Page",
    "RLSessionsClient",
    "ResourceSpec",
    "RetryPolicy",
    "ServerClock",
    "SessionStatus",
    "TogetherRLError",
    "TrainingSession",
]
