"""Typed HTTP client for Together AI's RL (post-training) API. No Dagster in this package.

The names here are what a user of the client needs: the client, the objects its methods
return, the enums of their statuses and codes, the errors it raises, its retry policy and
clock, and the lifecycle helpers (wait, stop, save a checkpoint). Nested blocks of those
objects (``LoraConfig``, ``WandbMetadata``, ...), the typed results of operations and the
supported-model catalogue are importable from the modules that define them
(``api.models``, ``api.operations``, ``api.catalog``, ``api.enums``).
"""

from ._http import API_KEY_ENV, DEFAULT_BASE_URL
from .catalog import CostEstimate, SupportedModel
from .checkpoints import CheckpointFailed
from .checkpoints import (
    create_inference_checkpoint_and_wait as create_inference_checkpoint_and_wait,
)
from .checkpoints import (
    create_training_checkpoint_and_wait as create_training_checkpoint_and_wait,
)
from .client import RLSessionsClient
from .clock import ServerClock
from .enums import (
    ACTIVE_SESSION_STATUSES,
    TERMINAL_SESSION_STATUSES,
    CheckpointType,
    CheckpointVariant,
    ModelResourceErrorCode,
    ModelResourceStatus,
    OperationErrorCode,
    OperationStatus,
    SessionErrorCode,
    SessionStatus,
)
from .errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    DeadlineExceeded,
    DecodeError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TLSCertificateError,
    TogetherRLError,
    TransportError,
    UnprocessableEntityError,
    UnreachableHostError,
)
from .inference import ChatCompletion, ChatMessage
from .lifecycle import (
    ResourceFailed,
    ResourceSpec,
    SessionFailed,
    StopOutcome,
    find_ready_resource,
    stop_resource,
    stop_session,
    wait_for_resource_ready,
    wait_for_session_running,
)
from .models import (
    Checkpoint,
    CheckpointDownload,
    InferenceCheckpoint,
    ModelResource,
    Registration,
    TrainingCheckpoint,
    TrainingSession,
)
from .operations import Operation
from .pages import Page, SkippedItem
from .retries import RetryEvent, RetryPolicy

__all__ = [
    "ACTIVE_SESSION_STATUSES",
    "API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "TERMINAL_SESSION_STATUSES",
    "APIStatusError",
    "AuthenticationError",
    "BadRequestError",
    "ChatCompletion",
    "ChatMessage",
    "Checkpoint",
    "CheckpointDownload",
    "CheckpointFailed",
    "CheckpointType",
    "CheckpointVariant",
    "ConfigurationError",
    "ConflictError",
    "CostEstimate",
    "DeadlineExceeded",
    "DecodeError",
    "InferenceCheckpoint",
    "ModelResource",
    "ModelResourceErrorCode",
    "ModelResourceStatus",
    "NotFoundError",
    "Operation",
    "OperationErrorCode",
    "OperationStatus",
    "Page",
    "PermissionDeniedError",
    "RLSessionsClient",
    "RateLimitError",
    "Registration",
    "ResourceFailed",
    "ResourceSpec",
    "RetryEvent",
    "RetryPolicy",
    "ServerClock",
    "ServerError",
    "SessionErrorCode",
    "SessionFailed",
    "SessionStatus",
    "SkippedItem",
    "StopOutcome",
    "SupportedModel",
    "TLSCertificateError",
    "TogetherRLError",
    "TrainingCheckpoint",
    "TrainingSession",
    "TransportError",
    "UnprocessableEntityError",
    "UnreachableHostError",
    "create_inference_checkpoint_and_wait",
    "create_training_checkpoint_and_wait",
    "find_ready_resource",
    "stop_resource",
    "stop_session",
    "wait_for_resource_ready",
    "wait_for_session_running",
]
