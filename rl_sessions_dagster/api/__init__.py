"""Typed HTTP client for Together AI's RL (post-training) API, without Dagster: here the objects a
user meets first; everything else from the module that defines it (``api.models``...)."""

# The two constants stay importable from here (0.2.0 listed them) but are settings, not concepts.
from ._http import API_KEY_ENV as API_KEY_ENV
from ._http import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from .client import RLSessionsClient
from .clock import ServerClock
from .enums import SessionStatus
from .errors import TogetherRLError
from .lifecycle import ResourceSpec
from .models import Checkpoint, InferenceCheckpoint, ModelResource, TrainingSession
from .pages import Page
from .retries import RetryPolicy

__all__ = [
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
