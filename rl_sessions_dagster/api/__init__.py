"""Typed HTTP client for Together AI's RL (post-training) API, without Dagster: here the objects a
user meets first; everything else from the module that defines it (``api.models``...)."""

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
