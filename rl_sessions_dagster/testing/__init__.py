"""Testing utilities: a local simulator of the Together RL HTTP service.

``RLSimulator`` serves a ``SimulatedWorld`` over real HTTP on 127.0.0.1, with fault injection
(``FaultPlan``) and a request log (``RequestLog``). Nothing here imports Dagster or the
library's own API client, so the simulator stays an independent oracle for both.
"""

from .simulator.faults import FaultPlan, FaultRule
from .simulator.requestlog import RequestLog, RequestRecord
from .simulator.server import RLSimulator
from .simulator.state import SimClock, StopRequest
from .simulator.wire import (
    CHECKPOINT_INFERENCE,
    CHECKPOINT_TRAINING,
    OPERATION_KINDS,
    RESOURCE_STATUSES,
    SESSION_STATUSES,
    SESSION_TERMINAL,
    SimulatorError,
)
from .simulator.world import SimulatedWorld

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
    "StopRequest",
]
