"""A scripted hyper-parameter sweep for demos and end-to-end tests, driven over real time the
way a training script drives the real service."""

import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from .simulator.world import SimulatedWorld

MODEL = "Qwen/Qwen3-8B"


@dataclass
class SweepOutcome:
    """What a correct pipeline must have reacted to."""

    sessions: dict[str, str] = field(default_factory=dict)  # session id -> role
    resources: dict[str, str] = field(default_factory=dict)  # model resource id -> role
    checkpoints: dict[str, tuple[str, int]] = field(default_factory=dict)  # id -> (session, step)
    finished: bool = False


@dataclass(eq=False)
class DemoSweep:
    """Three sessions, one ending each: ``trains`` saves ``checkpoints`` checkpoints on the
    ``shared`` resource (provisioned first), then is stopped, leaving ``shared`` READY and idle
    for an idle guard; ``no-capacity`` fails at creation; ``goes-idle`` saves one, then its
    resource expires. ``pace``: seconds between moves. The sweep stops ``trains`` only once
    ``noticed(resource)`` is true, so a sensor sees ``shared`` busy however fast the machine."""

    world: SimulatedWorld
    _: KW_ONLY
    checkpoints: int = 4
    steps_per_checkpoint: int = 20
    pace: float = 3.0
    provision_seconds: float | None = None  # None: ``pace``
    log: Callable[[str], None] = print
    noticed: Callable[[str], object] | None = None
    outcome: SweepOutcome = field(default_factory=SweepOutcome, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def start(self) -> "DemoSweep":
        self._thread = threading.Thread(target=self.run, name="demo-sweep", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _sleep(self) -> bool:
        return not self._stop.wait(self.pace)

    def run(self) -> None:
        w = self.world
        w.resource_provision_delay = (
            self.pace if self.provision_seconds is None else self.provision_seconds
        )
        shared = w.create_model_resource(MODEL, inactive_timeout=3600, status="PENDING")
        self.outcome.resources[shared] = "shared"
        self.log(f"model resource {shared[:8]} requested (PENDING → CREATING → READY)")
        if not self._until(lambda: w.model_resource(shared)["status"].endswith("READY"), 0.2):
            return
        self.log(f"model resource {shared[:8]} READY (billing from now)")
        trains = self._start_session(shared, "1e-5")
        self.outcome.sessions[trains] = "trains"
        idle_resource = w.create_model_resource(MODEL, inactive_timeout=600)
        self.outcome.resources[idle_resource] = "expires"
        idle = self._start_session(idle_resource, "1e-4")
        self.outcome.sessions[idle] = "goes-idle"
        if not self._sleep():
            return
        full = w.create_model_resource(MODEL, lora=False, inactive_timeout=600)
        self.outcome.resources[full] = "no-capacity"
        failed = w.create_session(full, display_name="sweep-lr-3e-5", fail_at_creation=True)
        self.outcome.sessions[failed] = "no-capacity"
        self.log(f"session {failed[:8]} sweep-lr-3e-5 failed at creation (no capacity)")
        self._checkpoint(idle)
        for i in range(self.checkpoints):
            if not self._sleep():
                return
            self._checkpoint(trains)
            if i == 0:
                w.expire_resource(idle_resource)
                self.log(f"session {idle[:8]} resource idle past its timeout → EXPIRED")
        noticed = self.noticed
        if not (self._sleep() and self._until(lambda: noticed is None or noticed(shared), 0.5)):
            return
        w.stop_session(trains, immediate=True)
        self.log(f"session {trains[:8]} stopped → STOPPED; its resource {shared[:8]} stays READY")
        self.outcome.finished = True

    def _start_session(self, resource_id: str, lr: str) -> str:
        url = f"https://wandb.ai/demo/gsm8k-sweep/runs/lr-{lr}"
        wandb = {"entity": "demo", "project": "gsm8k-sweep", "group": "lr-sweep",
                 "run_name": f"lr-{lr}", "url": url}  # fmt: skip
        sid = self.world.create_session(resource_id, display_name=f"sweep-lr-{lr}", wandb=wandb)
        self.log(f"session {sid[:8]} sweep-lr-{lr} started (RUNNING)")
        return sid

    def _until(self, condition: Callable[[], object], interval: float) -> bool:
        """Wait for ``condition``; False if the sweep is stopped first."""
        while not condition():
            if self._stop.wait(interval):
                return False
        return True

    def _checkpoint(self, session_id: str) -> None:
        step = self.world.advance_steps(session_id, self.steps_per_checkpoint)
        ckpt = self.world.add_inference_checkpoint(session_id)
        self.outcome.checkpoints[ckpt] = (session_id, step)
        self.log(f"session {session_id[:8]} saved inference checkpoint {ckpt[:8]} at step {step}")


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.5) -> bool:
    """Whether ``predicate`` became true within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
