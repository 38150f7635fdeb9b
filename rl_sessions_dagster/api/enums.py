"""Lenient enums for the RL API's constants: full (``TRAINING_SESSION_STATUS_RUNNING``) or short
(``RUNNING``) names parse, and a new value parses to ``UNKNOWN`` instead of raising."""

import functools
import os
from enum import Enum
from typing import Any, TypeVar

E = TypeVar("E", bound="LenientEnum")


@functools.cache
def wire_prefix(enum: type[Enum]) -> str:
    """What every wire constant of ``enum`` starts with, e.g. ``TRAINING_SESSION_STATUS_``."""
    # Character by character on purpose: the prefix is then cut back to its last ``_``.
    common = os.path.commonprefix([m.value for m in enum if m.name != "UNKNOWN"])  # noqa: RUF071
    return common[: common.rfind("_") + 1]


class LenientEnum(str, Enum):
    @classmethod
    def parse(cls: type[E], raw: Any) -> E:
        """A wire value's member; ``UNKNOWN`` for a value this library does not know."""
        if isinstance(raw, cls):
            return raw
        text = str(raw or "").strip().upper()
        for candidate in (text, wire_prefix(cls) + text):
            try:
                return cls(candidate)
            except ValueError:
                continue
        return cls("UNKNOWN")

    @property
    def short(self) -> str:
        """The constant without its prefix, e.g. ``RUNNING``."""
        return self.value.removeprefix(wire_prefix(type(self)))


class SessionStatus(LenientEnum):
    UNSPECIFIED = "TRAINING_SESSION_STATUS_UNSPECIFIED"
    CREATING = "TRAINING_SESSION_STATUS_CREATING"
    RUNNING = "TRAINING_SESSION_STATUS_RUNNING"
    STOPPING = "TRAINING_SESSION_STATUS_STOPPING"
    STOPPED = "TRAINING_SESSION_STATUS_STOPPED"
    ERROR = "TRAINING_SESSION_STATUS_ERROR"
    EXPIRED = "TRAINING_SESSION_STATUS_EXPIRED"
    UNKNOWN = "UNKNOWN"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_SESSION_STATUSES

    @property
    def is_active(self) -> bool:
        return self in ACTIVE_SESSION_STATUSES


#: Statuses a session never leaves (there is no restart endpoint).
TERMINAL_SESSION_STATUSES = frozenset(SessionStatus[n] for n in ("STOPPED", "ERROR", "EXPIRED"))
#: Statuses accepted by the list filter that are still moving. STOPPING still holds a slot.
ACTIVE_SESSION_STATUSES = frozenset(SessionStatus[n] for n in ("CREATING", "RUNNING", "STOPPING"))


class SessionErrorCode(LenientEnum):
    UNSPECIFIED = "TRAINING_SESSION_ERROR_CODE_UNSPECIFIED"
    RESOURCE_UNAVAILABLE = "TRAINING_SESSION_ERROR_CODE_RESOURCE_UNAVAILABLE"
    RESOURCE_AT_CAPACITY = "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
    TIMED_OUT = "TRAINING_SESSION_ERROR_CODE_TIMED_OUT"
    SESSION_FAILED = "TRAINING_SESSION_ERROR_CODE_SESSION_FAILED"
    UNKNOWN = "UNKNOWN"


class ModelResourceStatus(LenientEnum):
    UNSPECIFIED = "MODEL_RESOURCES_STATUS_UNSPECIFIED"
    PENDING = "MODEL_RESOURCES_STATUS_PENDING"
    CREATING = "MODEL_RESOURCES_STATUS_CREATING"
    READY = "MODEL_RESOURCES_STATUS_READY"
    STOPPING = "MODEL_RESOURCES_STATUS_STOPPING"
    STOPPED = "MODEL_RESOURCES_STATUS_STOPPED"
    ERROR = "MODEL_RESOURCES_STATUS_ERROR"
    UNKNOWN = "UNKNOWN"


class CheckpointType(LenientEnum):
    UNSPECIFIED = "CHECKPOINT_TYPE_UNSPECIFIED"
    TRAINING = "CHECKPOINT_TYPE_TRAINING"
    INFERENCE = "CHECKPOINT_TYPE_INFERENCE"
    UNKNOWN = "UNKNOWN"


class CheckpointVariant(LenientEnum):
    MERGED = "CHECKPOINT_VARIANT_MERGED"
    ADAPTER = "CHECKPOINT_VARIANT_ADAPTER"
    UNKNOWN = "UNKNOWN"


class OperationStatus(LenientEnum):
    UNSPECIFIED = "TRAINING_OPERATION_STATUS_UNSPECIFIED"
    PENDING = "TRAINING_OPERATION_STATUS_PENDING"
    RUNNING = "TRAINING_OPERATION_STATUS_RUNNING"
    COMPLETED = "TRAINING_OPERATION_STATUS_COMPLETED"
    FAILED = "TRAINING_OPERATION_STATUS_FAILED"
    UNKNOWN = "UNKNOWN"

    @property
    def is_done(self) -> bool:
        return self in (OperationStatus.COMPLETED, OperationStatus.FAILED)


class ModelResourceErrorCode(LenientEnum):
    """Why a model resource is in ERROR (SDK ``ModelResourcesErrorCode``)."""

    UNSPECIFIED = "MODEL_RESOURCES_ERROR_CODE_UNSPECIFIED"
    CAPACITY_WAIT_TIMEOUT = "MODEL_RESOURCES_ERROR_CODE_CAPACITY_WAIT_TIMEOUT"
    PROVISIONING_FAILED = "MODEL_RESOURCES_ERROR_CODE_PROVISIONING_FAILED"
    RESOURCE_UNAVAILABLE = "MODEL_RESOURCES_ERROR_CODE_RESOURCE_UNAVAILABLE"
    UNKNOWN = "UNKNOWN"


class OperationErrorCode(LenientEnum):
    """Why an operation FAILED (SDK ``OperationErrorCode``)."""

    UNSPECIFIED = "TRAINING_OPERATION_ERROR_CODE_UNSPECIFIED"
    RESOURCE_EXHAUSTED = "TRAINING_OPERATION_ERROR_CODE_RESOURCE_EXHAUSTED"
    TIMEOUT = "TRAINING_OPERATION_ERROR_CODE_TIMEOUT"
    INTERNAL_ERROR = "TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR"
    SESSION_NOT_ACTIVE = "TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE"
    INVALID_INPUT = "TRAINING_OPERATION_ERROR_CODE_INVALID_INPUT"
    NON_FINITE_LOSS = "TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS"
    UNKNOWN = "UNKNOWN"


class WeightSyncType(LenientEnum):
    """How a weights-sync publishes the trainer's weights to the generator."""

    SYNCHRONOUS = "WEIGHT_SYNC_TYPE_SYNCHRONOUS"
    BACKGROUND_PUBLISH = "WEIGHT_SYNC_TYPE_BACKGROUND_PUBLISH"
    PIPELINE = "WEIGHT_SYNC_TYPE_PIPELINE"
    UNKNOWN = "UNKNOWN"


class StopReason(LenientEnum):
    """Why a sampled sequence ended."""

    LENGTH = "STOP_REASON_LENGTH"
    STOP = "STOP_REASON_STOP"
    UNKNOWN = "UNKNOWN"


class MuonScalingStrategy(LenientEnum):
    UNSPECIFIED = "MUON_SCALING_STRATEGY_UNSPECIFIED"
    MATCH_ADAM = "MUON_SCALING_STRATEGY_MATCH_ADAM"
    ORIGINAL = "MUON_SCALING_STRATEGY_ORIGINAL"
    UNKNOWN = "UNKNOWN"
