"""Typed HTTP client for Together AI's RL (post-training) API. No Dagster in this package.

The names here are what a user of the client needs: the client, the objects its methods
return, the enums of their statuses and codes, the errors it raises, its retry policy and
clock, and the lifecycle helpers (wait, stop, save a checkpoint). Nested blocks of those
objects (``LoraConfig``, ``WandbMetadata``, ...), the typed results of operations and the
supported-model catalogue are importable from the modules that define them
(``api.models``, ``api.operation_results``, ``api.catalog``, ``api.enums``).

The client loads on first use (see ``__getattr__``): it imports ``httpx`` (which imports
``rich``), and a definitions file that only reads models, errors and constants should not pay
for it.
"""

from typing import TYPE_CHECKING

from ..namespace import lazy_exports

# The public names, loaded on first use (see ``namespace.py``).
if TYPE_CHECKING:
    from .catalog import CostEstimate as CostEstimate
    from .catalog import SupportedModel as SupportedModel
    from .chat import ChatCompletion as ChatCompletion
    from .chat import ChatMessage as ChatMessage
    from .checkpoint_ops import CheckpointFailed as CheckpointFailed
    from .checkpoint_ops import (
        create_inference_checkpoint_and_wait as create_inference_checkpoint_and_wait,
    )
    from .checkpoint_ops import (
        create_training_checkpoint_and_wait as create_training_checkpoint_and_wait,
    )
    from .client import RLSessionsClient as RLSessionsClient
    from .clock import ServerClock as ServerClock
    from .enums import ACTIVE_SESSION_STATUSES as ACTIVE_SESSION_STATUSES
    from .enums import TERMINAL_SESSION_STATUSES as TERMINAL_SESSION_STATUSES
    from .enums import CheckpointType as CheckpointType
    from .enums import CheckpointVariant as CheckpointVariant
    from .enums import ModelResourceErrorCode as ModelResourceErrorCode
    from .enums import ModelResourceStatus as ModelResourceStatus
    from .enums import OperationErrorCode as OperationErrorCode
    from .enums import OperationStatus as OperationStatus
    from .enums import SessionErrorCode as SessionErrorCode
    from .enums import SessionStatus as SessionStatus
    from .env import API_KEY_ENV as API_KEY_ENV
    from .env import DEFAULT_BASE_URL as DEFAULT_BASE_URL
    from .errors import APIStatusError as APIStatusError
    from .errors import AuthenticationError as AuthenticationError
    from .errors import BadRequestError as BadRequestError
    from .errors import ConfigurationError as ConfigurationError
    from .errors import ConflictError as ConflictError
    from .errors import DeadlineExceeded as DeadlineExceeded
    from .errors import DecodeError as DecodeError
    from .errors import NotFoundError as NotFoundError
    from .errors import PermissionDeniedError as PermissionDeniedError
    from .errors import RateLimitError as RateLimitError
    from .errors import ServerError as ServerError
    from .errors import TLSCertificateError as TLSCertificateError
    from .errors import TogetherRLError as TogetherRLError
    from .errors import TransportError as TransportError
    from .errors import UnprocessableEntityError as UnprocessableEntityError
    from .errors import UnreachableHostError as UnreachableHostError
    from .lifecycle import ResourceFailed as ResourceFailed
    from .lifecycle import ResourceSpec as ResourceSpec
    from .lifecycle import SessionFailed as SessionFailed
    from .lifecycle import StopOutcome as StopOutcome
    from .lifecycle import find_ready_resource as find_ready_resource
    from .lifecycle import stop_resource as stop_resource
    from .lifecycle import stop_session as stop_session
    from .lifecycle import wait_for_resource_ready as wait_for_resource_ready
    from .lifecycle import wait_for_session_running as wait_for_session_running
    from .models import Checkpoint as Checkpoint
    from .models import CheckpointDownload as CheckpointDownload
    from .models import InferenceCheckpoint as InferenceCheckpoint
    from .models import ModelResource as ModelResource
    from .models import Registration as Registration
    from .models import TrainingCheckpoint as TrainingCheckpoint
    from .models import TrainingSession as TrainingSession
    from .operation_results import Operation as Operation
    from .pages import Page as Page
    from .pages import SkippedItem as SkippedItem
    from .retries import RetryEvent as RetryEvent
    from .retries import RetryPolicy as RetryPolicy

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
