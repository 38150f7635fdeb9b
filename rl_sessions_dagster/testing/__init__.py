"""The test kit: ``RLSimulator`` serves a ``SimulatedWorld`` over HTTP, with ``FaultPlan`` and
``RequestLog``; it imports neither Dagster nor the API client, so it stays an oracle for both."""

from .simulator.faults import FaultPlan
from .simulator.requestlog import RequestLog
from .simulator.server import RLSimulator
from .simulator.wire import SimulatorError
from .simulator.world import SimulatedWorld

__all__ = [
    "FaultPlan",
    "RLSimulator",
    "RequestLog",
    "SimulatedWorld",
    "SimulatorError",
]
