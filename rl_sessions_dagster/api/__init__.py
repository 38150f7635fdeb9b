"""Typed HTTP client for Together AI's RL (post-training) API. No Dagster in this package.

Here: the client, its retry policy and clock, the objects a user meets first and the base
error; everything else comes from the module that defines it (``api.models``, ``api.errors``...).
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
