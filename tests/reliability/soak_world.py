"""The soak's world: a simulated account that keeps changing under a fault mix, and what its
history says the sensors must have requested."""

import random
from collections import Counter
from dataclasses import dataclass, field

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld, SimulatorError

from .conftest import RecordingTicker

UNKNOWN_STATUSES = ("TRAINING_SESSION_STATUS_PAUSED", "TRAINING_SESSION_STATUS_SUSPENDED")
KNOWN_ACTIVE = {
    "TRAINING_SESSION_STATUS_CREATING",
    "TRAINING_SESSION_STATUS_RUNNING",
    "TRAINING_SESSION_STATUS_STOPPING",
}
TERMINAL_KIND = {
    "TRAINING_SESSION_STATUS_STOPPED": "session_stopped",
    "TRAINING_SESSION_STATUS_ERROR": "session_error",
    "TRAINING_SESSION_STATUS_EXPIRED": "session_expired",
}


def add_fault_mix(sim: RLSimulator) -> None:
    """About 20 % of API reads fail, each kind at its own seeded rate."""
    reads = "GET /v1/rl/*"
    sim.faults.add(reads, status=429, retry_after=0.03, rate=0.05)
    sim.faults.add(reads, status=503, rate=0.04)
    sim.faults.add(reads, status=500, rate=0.015)
    sim.faults.add(reads, status=502, rate=0.015)
    sim.faults.add(reads, drop=True, rate=0.03)
    sim.faults.add(reads, malformed=True, rate=0.03)
    sim.faults.add(reads, delay_s=0.8, rate=0.008)  # > request_timeout: a client timeout
    sim.faults.add(reads, delay_s=0.05, rate=0.03)  # slow but in time


@dataclass
class ChangingWorld:
    """Drives a SimulatedWorld through random but seeded lifecycles and remembers the truth:
    which checkpoints exist and are registered, and which raw statuses each session had."""

    world: SimulatedWorld
    rng: random.Random
    resources: list[str] = field(default_factory=list)
    checkpoints: dict[str, str] = field(default_factory=dict)  # checkpoint id -> session id
    registered: set[str] = field(default_factory=set)
    lagging: list[str] = field(default_factory=list)
    never_registered: set[str] = field(default_factory=set)
    statuses: dict[str, set[str]] = field(default_factory=dict)  # session -> raw statuses seen
    actions: Counter = field(default_factory=Counter)

    def status(self, sid: str) -> str:
        return self.world.session(sid)["status"]

    def observe(self) -> None:
        for s in self.world.sessions():
            self.statuses.setdefault(s["id"], set()).add(s["status"])

    def _resource(self) -> str:
        if not self.resources or self.rng.random() < 0.15:
            timeout = self.rng.choice([3600, 3600, 45, 90])  # some go idle and expire
            self.resources.append(self.world.create_model_resource(inactive_timeout=timeout))
        return self.rng.choice(self.resources[-4:])

    def new_session(self) -> None:
        rid = self._resource()
        roll = self.rng.random()
        try:
            if roll < 0.2:
                self.world.create_session(rid, fail_at_creation=True)
                self.actions["born failed"] += 1
            elif roll < 0.4:
                if self.rng.random() < 0.4:
                    self.world.fail_next_session_creates(1)
                    self.actions["failed while starting"] += 1
                self.world.request_session(rid, display_name=f"req-{self.rng.randrange(999)}")
                self.actions["created via request (CREATING first)"] += 1
            else:
                self.world.create_session(rid, display_name=f"run-{self.rng.randrange(999)}")
                self.actions["created running"] += 1
        except SimulatorError:  # resource full or no longer READY
            self.resources.remove(rid)
            self.actions["create refused"] += 1

    def checkpoint(self, sid: str, *, registered: bool | None = None) -> str:
        self.world.advance_steps(sid, self.rng.randint(1, 20))
        if registered is None:
            registered = self.rng.random() > 0.3
        cid = self.world.add_inference_checkpoint(sid, registered=registered)
        self.checkpoints[cid] = sid
        if registered:
            self.registered.add(cid)
        elif self.rng.random() < 0.1:
            self.never_registered.add(cid)
        else:
            self.lagging.append(cid)
        self.actions["checkpoint" if registered else "checkpoint, registered later"] += 1
        return cid

    def step(self) -> None:
        """One round of changes, then a little simulated time."""
        rng, world = self.rng, self.world
        if rng.random() < 0.3:
            self.new_session()
        for s in world.sessions():
            sid, status = s["id"], s["status"]
            if status == "TRAINING_SESSION_STATUS_RUNNING":
                roll = rng.random()
                if roll < 0.15:
                    self.checkpoint(sid)
                elif roll < 0.19:
                    world.stop_session(sid, immediate=rng.random() < 0.5)
                    self.actions["stopped"] += 1
                elif roll < 0.205:
                    world.fail_session(sid)
                    self.actions["failed"] += 1
                elif roll < 0.22:
                    world.set_status(sid, rng.choice(UNKNOWN_STATUSES))
                    self.actions["unknown status"] += 1
            elif status in UNKNOWN_STATUSES and rng.random() < 0.25:
                if rng.random() < 0.7:
                    world.set_status(sid, "RUNNING")
                    self.actions["back to running"] += 1
                else:
                    world.stop_session(sid, immediate=True)
                    self.actions["stopped"] += 1
        if self.lagging and rng.random() < 0.3:
            cid = self.lagging.pop(rng.randrange(len(self.lagging)))
            world.register_checkpoint(cid)
            self.registered.add(cid)
            self.actions["late registration"] += 1
        if rng.random() < 0.015:
            ready = [r["id"] for r in world.model_resources() if r["status"].endswith("READY")]
            if ready:
                world.expire_resource(rng.choice(ready))
                self.actions["resource expired now"] += 1
        self.observe()
        world.advance_clock(rng.uniform(0.2, 3.0))  # timers: starts, stops, idle expiry
        self.observe()

    def settle(self) -> None:
        """Everything ends: every session terminal, every lagging checkpoint registered (but
        the few that never will be)."""
        for cid in self.lagging:
            self.world.register_checkpoint(cid)
            self.registered.add(cid)
        self.lagging.clear()
        for s in self.world.sessions():
            if s["status"] not in TERMINAL_KIND:
                self.world.stop_session(s["id"], immediate=True)
        self.world.advance_clock(5)
        self.observe()


def expected_events(cw: ChangingWorld, before: set[str], terminal_before: set[str]):
    """The facts that happened after the sensors' first tick, as run keys, by event kind."""
    created = {
        f"checkpoint_created:{sid}:{cid}"
        for cid, sid in cw.checkpoints.items()
        if cid not in before
    }
    registered = {
        f"checkpoint_registered:{sid}:{cid}"
        for cid, sid in cw.checkpoints.items()
        if cid not in before and cid in cw.registered
    }
    terminal = set()
    for s in cw.world.sessions():
        kind = TERMINAL_KIND.get(s["status"])
        assert kind is not None, f"session {s['id']} did not settle: {s['status']}"
        if s["id"] not in terminal_before:
            terminal.add(f"{kind}:{s['id']}")
    return created, registered, terminal


def assert_exactly_once(ticker: RecordingTicker, expected: set[str]) -> list:
    keys = [r.run_key for r in ticker.run_requests]
    dupes = {k: n for k, n in Counter(keys).items() if n > 1}
    assert not dupes, f"{ticker.sensor.name}: run keys requested more than once: {dupes}"
    missing = expected - set(keys)
    invented = set(keys) - expected
    assert not missing, f"{ticker.sensor.name}: {len(missing)} events never requested: {missing}"
    assert not invented, f"{ticker.sensor.name}: {len(invented)} invented run keys: {invented}"
    return keys
