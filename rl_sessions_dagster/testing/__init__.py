"""The test kit: ``RLSimulator`` serves a ``SimulatedWorld`` over HTTP on 127.0.0.1, with
faults (``FaultPlan``) and a request log (``RequestLog``). The simulator imports neither Dagster
nor the library's API client, so it stays an independent oracle for both.
"""

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
