"""Testing utilities: a local simulator of the Together RL HTTP service.

``RLSimulator`` serves a ``SimulatedWorld`` over real HTTP on 127.0.0.1, with fault injection
(``FaultPlan``) and a request log (``RequestLog``). Nothing here imports Dagster or the
library's own API client, so the simulator stays an independent oracle for both.
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
