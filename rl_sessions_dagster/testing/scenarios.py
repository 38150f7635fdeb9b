"""Scripted worlds for demos and end-to-end tests: a small hyper-parameter sweep.

``DemoSweep`` drives a :class:`SimulatedWorld` over real time, the way a training script would
drive the real service, so the Dagster daemon's sensors see sessions start, checkpoints land,
a capacity error at creation, an idle resource expiring, and a clean stop.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .simulator.world import SimulatedWorld

CAPACITY_MESSAGE = (
    "The session could not start because the selected resource has no available capacity."
)


@dataclass
class SweepOutcome:
    """What the sweep did: what a correct pipeline must have reacted to."""

    sessions: dict[str, str] = field(default_factory=dict)  # session id -> role
    resources: dict[str, str] = field(default_factory=dict)  # model resource id -> role
    checkpoints: dict[str, tuple[str, int]] = field(default_factory=dict)  # id -> (session, step)
    finished: bool = False


class DemoSweep:
    """Three sessions of one sweep, each showing one ending, on three model resources.

    * ``trains``: trains, saves ``checkpoints`` registered inference checkpoints (every
      ``steps_per_checkpoint`` steps), then is stopped → STOPPED;
    * ``no-capacity``: fails at creation, its resource full → ERROR (RESOURCE_AT_CAPACITY);
    * ``goes-idle``: trains a little, saves one checkpoint, then its resource stops for
      inactivity → EXPIRED.

    Resources (``outcome.resources``): ``shared`` is requested PENDING and provisioned
    (CREATING, then READY after ``provision_seconds``; this sets the world's
    ``resource_provision_delay``) before ``trains`` starts on it, and is left READY with no
    session when the sweep ends; ``no-capacity`` stays READY with no session from the start;
    ``expires`` goes STOPPED with its session. The two left READY are what an idle guard stops.

    ``pace`` is the wall-clock seconds between two moves; ``log`` receives one line per move.
    ``noticed(resource_id)``, when given, holds the sweep before it stops ``trains`` until it
    returns true for ``shared``: a demo waits there until its sensor has seen the resource READY
    (busy with ``trains``, so no idle guard can stop it first), so that event does not depend
    on how fast the machine is. (The other two resources may stop before a slow
    sensor sees them READY; a watcher then sees only their stop.)
    """

    def __init__(
        self,
        world: SimulatedWorld,
        *,
        checkpoints: int = 4,
        steps_per_checkpoint: int = 20,
        pace: float = 3.0,
        provision_seconds: float | None = None,
        log: Callable[[str], None] = print,
        noticed: Callable[[str], object] | None = None,
    ) -> None:
        self.world = world
        self.n_checkpoints = checkpoints
        self.steps = steps_per_checkpoint
        self.pace = pace
        self.provision_seconds = pace if provision_seconds is None else provision_seconds
        self.log = log
        self.noticed = noticed
        self.outcome = SweepOutcome()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- running ---------------------------------------------------------------------------
    def start(self) -> "DemoSweep":
        self._thread = threading.Thread(target=self.run, name="demo-sweep", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.outcome.finished

    def _sleep(self) -> bool:
        return not self._stop.wait(self.pace)

    def run(self) -> None:
        w = self.world
        wandb = {"entity": "demo", "project": "gsm8k-sweep", "group": "lr-sweep"}
        w.resource_provision_delay = self.provision_seconds
        shared = w.create_model_resource(
            "Qwen/Qwen3-8B", lora=True, inactive_timeout=3600, status="PENDING"
        )
        self.outcome.resources[shared] = "shared"
        self.log(f"model resource {shared[:8]} requested (PENDING → CREATING → READY)")
        if not self._until_ready(shared):
            return
        self.log(f"model resource {shared[:8]} READY (billing from now)")
        trains = w.create_session(
            shared,
            display_name="sweep-lr-1e-5",
            wandb={
                **wandb,
                "run_name": "lr-1e-5",
                "url": "https://wandb.ai/demo/gsm8k-sweep/runs/lr-1e-5",
            },
        )
        self.outcome.sessions[trains] = "trains"
        self.log(f"session {trains[:8]} sweep-lr-1e-5 started (RUNNING)")
        idle_resource = w.create_model_resource("Qwen/Qwen3-8B", lora=True, inactive_timeout=600)
        self.outcome.resources[idle_resource] = "expires"
        idle = w.create_session(
            idle_resource,
            display_name="sweep-lr-1e-4",
            wandb={
                **wandb,
                "run_name": "lr-1e-4",
                "url": "https://wandb.ai/demo/gsm8k-sweep/runs/lr-1e-4",
            },
        )
        self.outcome.sessions[idle] = "goes-idle"
        self.log(f"session {idle[:8]} sweep-lr-1e-4 started (RUNNING)")
        if not self._sleep():
            return
        full = w.create_model_resource("Qwen/Qwen3-8B", lora=False, inactive_timeout=600)
        self.outcome.resources[full] = "no-capacity"
        failed = w.create_session(full, display_name="sweep-lr-3e-5", fail_at_creation=True)
        self.outcome.sessions[failed] = "no-capacity"
        self.log(f"session {failed[:8]} sweep-lr-3e-5 failed at creation (no capacity)")
        self._checkpoint(idle)
        for i in range(self.n_checkpoints):
            if not self._sleep():
                return
            self._checkpoint(trains)
            if i == 0:
                w.expire_resource(idle_resource)
                self.log(f"session {idle[:8]} resource idle past its timeout → EXPIRED")
        if not self._sleep():
            return
        if not self._until_noticed(shared):
            return
        w.stop_session(trains, immediate=True)
        self.log(f"session {trains[:8]} stopped → STOPPED; its resource {shared[:8]} stays READY")
        self.outcome.finished = True

    def _until_ready(self, resource_id: str) -> bool:
        while not self.world.model_resource(resource_id)["status"].endswith("READY"):
            if self._stop.wait(0.2):
                return False
        return True

    def _until_noticed(self, resource_id: str) -> bool:
        while self.noticed is not None and not self.noticed(resource_id):
            if self._stop.wait(0.5):
                return False
        return True

    def _checkpoint(self, session_id: str) -> None:
        step = self.world.advance_steps(session_id, self.steps)
        ckpt = self.world.add_inference_checkpoint(session_id)
        self.outcome.checkpoints[ckpt] = (session_id, step)
        self.log(f"session {session_id[:8]} saved inference checkpoint {ckpt[:8]} at step {step}")


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.5) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass; returns whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
