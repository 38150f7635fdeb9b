"""Local simulator of the Together RL (post-training) HTTP service; see ``RLSimulator``."""

from .clock import SimClock
from .constants import (
    CHECKPOINT_INFERENCE,
    CHECKPOINT_TRAINING,
    OPERATION_KINDS,
    RESOURCE_STATUSES,
    SESSION_STATUSES,
    SESSION_TERMINAL,
)
from .errors import SimulatorError
from .faults import FaultPlan, FaultRule
from .requestlog import RequestLog, RequestRecord
from .server import RLSimulator
from .world import SimulatedWorld

__all__ = [
    "CHECKPOINT_INFERENCE",
    "CHECKPOINT_TRAINING",
    "OPERATION_KINDS",
    "RESOURCE_STATUSES",
    "SESSION_STATUSES",
    "SESSION_TERMINAL",
    "FaultPlan",
    "FaultRule",
    "RLSimulator",
    "RequestLog",
    "RequestRecord",
    "SimClock",
    "SimulatedWorld",
    "SimulatorError",
]
