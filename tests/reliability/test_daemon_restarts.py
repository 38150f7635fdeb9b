"""The real dagster-daemon, SIGKILLed (whole process group) in the middle of sensor ticks and
restarted, while the simulated world keeps saving checkpoints: at the end every checkpoint was
evaluated exactly once.

Kills are aimed at a tick in progress while no run is executing: with the DefaultRunLauncher a
run lives in the daemon's process group, and Dagster cannot tell that a SIGKILLed run worker
died (no run-worker health check), so killing a run would test Dagster's run monitoring, not
this library. Every wait is on an event, never on a window of time, so a loaded machine only
makes the test slower: the world pauses while the kill is aimed, the runs drain, and the kill
lands while the sensor function is blocked inside one of its list reads (slowed to 1 s each by
the simulator), which proves it has not returned and so launched nothing. A tick that slips
by before the kill is aimed is no failure: the next tick is the next chance.
"""

import functools
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.scheduler.instigation import TickStatus

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import dagster_daemon, group_alive, prepare_dagster_home

from ..daemon_defs import daemon_env
from .conftest import API_KEY, FINISHED_TICK, sensor_ticks, wait_for

ROOT = Path(__file__).resolve().parents[2]
SENSOR = "together_rl_checkpoint_sensor"
LIST = "/v1/rl/training-sessions"
IN_FLIGHT = [
    dg.DagsterRunStatus.NOT_STARTED,  # created by a tick, not yet handed to the launcher
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
# Ceilings, not expectations: each wait returns as soon as its event happens. They are sized
# for a machine several times slower than an idle 2-core one (a loaded dagster-daemon takes
# ~20 s to start and a run several seconds to launch).
DAEMON_START = 240
PROGRESS = 300
pytestmark = [pytest.mark.daemon, pytest.mark.slow]


class Saver:
    """Saves an inference checkpoint every ``pace`` seconds on one of ``sessions``; one in
    three is registered only at the next move (registration lag). ``paused()`` holds the
    world still while a kill is being aimed.

    It waits while ``max_backlog`` of its checkpoints are not evaluated yet: on a loaded
    machine a daemon takes long to start and runs long to finish, and a world saving at a
    fixed pace would pile up more runs than the machine can drain.
    """

    def __init__(
        self,
        world,
        sessions: list[str],
        pace: float,
        instance: dg.DagsterInstance,
        max_backlog: int = 4,
    ) -> None:
        self.world, self.sessions, self.pace = world, sessions, pace
        self.instance, self.max_backlog = instance, max_backlog
        self.checkpoints: dict[str, str] = {}
        self._lagging: list[str] = []
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="checkpoint-saver", daemon=True)
        self._n = 0

    def _run(self) -> None:
        while not self._stop.wait(self.pace):
            if not self._paused.is_set() and self.backlog() < self.max_backlog:
                self.save()

    def backlog(self) -> int:
        """How many of the saved checkpoints have no successful evaluation run yet."""
        done = dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS])
        evaluated = {r.tags.get("dagster/partition") for r in self.instance.get_runs(done)}
        with self._lock:
            return sum(cid not in evaluated for cid in self.checkpoints)

    def save(self) -> None:
        with self._lock:
            for cid in self._lagging:
                self.world.register_checkpoint(cid)
            self._lagging.clear()
            sid = self.sessions[self._n % len(self.sessions)]
            self._n += 1
            self.world.advance_steps(sid, 10)
            registered = self._n % 3 != 0
            cid = self.world.add_inference_checkpoint(sid, registered=registered)
            if not registered:
                self._lagging.append(cid)
            self.checkpoints[cid] = sid

    @contextmanager
    def paused(self) -> Iterator[None]:
        self._paused.set()
        with self._lock:  # a save in progress finishes first
            pass
        try:
            yield
        finally:
            self._paused.clear()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        with self._lock:
            for cid in self._lagging:
                self.world.register_checkpoint(cid)
            self._lagging.clear()


def in_flight(instance: dg.DagsterInstance) -> list:
    return list(instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT)))


def list_read_in_progress(sim: RLSimulator) -> bool:
    """True when a (delayed) list read has been accepted by the simulator and not answered.

    The delay rule counts a request when it starts sleeping; the request log records it just
    before the answer goes out. Reading the rule first, then the log: more started than
    answered means one was still unanswered when the log was read.
    """
    (delay,) = sim.faults.rules
    started = delay.applied
    return started > sim.requests.count("GET", LIST)


def kill_mid_tick(
    instance, proc, sim: RLSimulator, saver: Saver, rng: random.Random, *, after_progress: bool
) -> int:
    """SIGKILL the daemon's process group while its sensor function is blocked in an API read
    of a tick that saw a new checkpoint, with no run executing; returns the tick id."""
    of_earlier_lives = {t.tick_id for t in sensor_ticks(instance, SENSOR, statuses=None)}
    if after_progress:
        wait_for(
            lambda: any(
                t.tick_id not in of_earlier_lives and t.status == TickStatus.SUCCESS
                for t in sensor_ticks(instance, SENSOR, statuses=None)
            ),
            DAEMON_START + PROGRESS,
            "a tick of this daemon that launched runs",
        )

    def quiet() -> bool:
        """No tick of this daemon in progress and no run in flight."""
        busy = any(
            t.status == TickStatus.STARTED and t.tick_id not in of_earlier_lives
            for t in sensor_ticks(instance, SENSOR, statuses=None)
        )
        return not busy and not in_flight(instance)

    def fresh_tick_reading(seen: set[int]):
        """A tick not in ``seen``, still running, whose sensor function is inside a read."""
        # The cheap in-memory check first: the instance query can take a while.
        if not list_read_in_progress(sim):
            return None
        ticks = sensor_ticks(instance, SENSOR, statuses=None)
        newest = ticks[0] if ticks else None
        if newest is None or newest.tick_id in seen:
            return None
        return newest if newest.status == TickStatus.STARTED else None

    missed = 0
    with saver.paused():
        while True:
            wait_for(quiet, 2 * PROGRESS, "this daemon's runs to finish before aiming a kill")
            seen = {t.tick_id for t in sensor_ticks(instance, SENSOR, statuses=None)}
            saver.save()  # a fresh event for the tick about to be killed
            tick = wait_for(
                functools.partial(fresh_tick_reading, seen),
                DAEMON_START,
                "a new tick inside its API read",
                interval=0.02,
            )
            time.sleep(rng.uniform(0.0, 0.6))  # somewhere inside the 1 s read
            newest = sensor_ticks(instance, SENSOR, statuses=None)[0]
            still_reading = (
                not in_flight(instance)
                and newest.tick_id == tick.tick_id
                and newest.status == TickStatus.STARTED
                and list_read_in_progress(sim)  # last: nothing slow between it and the kill
            )
            if still_reading:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            # The tick got its answer before the aim was taken (a slow poll on a loaded
            # machine) and may launch runs: let it finish, and aim at a later tick.
            missed += 1
    print(f"killed daemon {proc.pid} inside tick {tick.tick_id} ({missed} aims missed)")
    proc.wait(timeout=60)
    wait_for(lambda: not group_alive(proc.pid), 60, "the killed process group to be gone")
    return tick.tick_id


@pytest.mark.timeout(1800)
def test_sigkilled_daemon_evaluates_every_checkpoint_exactly_once(sim, tmp_path, dagster_storage):
    world = sim.world
    sessions = [world.create_session(display_name=f"restart-{i}") for i in range(2)]
    world.add_inference_checkpoint(sessions[0])  # history: never evaluated
    # Every tick reads two lists; a 1 s delay on each keeps the sensor function inside an API
    # read long enough to aim a kill there.
    sim.faults.add(f"GET {LIST}", delay_s=1.0)
    home = prepare_dagster_home(tmp_path / "home", storage=dagster_storage)
    env = daemon_env("restarts", sim.base_url, API_KEY)
    rng = random.Random(3)
    killed: list[int] = []
    pgids: list[int] = []
    # Create the SQLite storages before any daemon starts: two processes initialising a fresh
    # DAGSTER_HOME at once can stamp alembic_version twice ("more than one head present").
    instance = dg.DagsterInstance.from_config(str(home))
    # The saver thread reads the instance through its own object.
    saver = Saver(world, sessions, pace=3.5, instance=dg.DagsterInstance.from_config(str(home)))

    def daemon(life: int):
        return dagster_daemon(
            home,
            "tests.daemon_defs",
            working_directory=ROOT,
            env=env,
            log_path=home / f"daemon-{life}.log",
        )

    try:
        for life in range(3):
            with daemon(life) as proc:
                pgids.append(proc.pid)
                if life == 0:
                    wait_for(
                        lambda: sensor_ticks(instance, SENSOR, [TickStatus.SKIPPED]),
                        DAEMON_START,
                        "the first (baseline) tick",
                    )
                    saver.start()
                # Life 1 is killed during the first tick it can be (no progress of its own
                # first); the others after they launched runs. Between lives the world saves
                # checkpoints while no daemon runs.
                killed.append(
                    kill_mid_tick(instance, proc, sim, saver, rng, after_progress=life != 1)
                )

        # The world stops saving; on a loaded machine the lives may have been short, so top the
        # world up to at least six checkpoints while no daemon runs (events during downtime).
        saver.stop()
        while len(saver.checkpoints) < 6:
            saver.save()
        saver.stop()  # registers the lagging ones
        with daemon(3) as proc:
            pgids.append(proc.pid)
            # Everything the world saved must be evaluated, once.
            expected = {f"checkpoint_registered:{s}:{c}" for c, s in saver.checkpoints.items()}

            def missing() -> set[str]:
                done = {
                    r.tags.get("dagster/run_key")
                    for r in instance.get_runs()
                    if r.status == dg.DagsterRunStatus.SUCCESS
                }
                return expected - done

            try:
                wait_for(
                    lambda: not missing() and not in_flight(instance),
                    DAEMON_START + 2 * PROGRESS,
                    "evaluations",
                )
            except AssertionError:
                raise AssertionError(
                    f"{len(missing())} of {len(expected)} checkpoints never evaluated: "
                    f"{sorted(missing())}; home: {home}"
                ) from None
            n_ticks = len(sensor_ticks(instance, SENSOR, FINISHED_TICK))
            wait_for(
                lambda: len(sensor_ticks(instance, SENSOR, FINISHED_TICK)) > n_ticks,
                PROGRESS,
                "one more tick",
            )
            wait_for(lambda: not in_flight(instance), PROGRESS, "no run in flight")
    finally:
        saver.stop()

    assert all(not group_alive(p) for p in pgids)
    assert len(killed) == 3 and len(saver.checkpoints) >= 6
    runs = list(instance.get_runs())
    statuses = Counter(r.status for r in runs)
    assert statuses == {dg.DagsterRunStatus.SUCCESS: len(runs)}, statuses
    run_keys = Counter(r.tags["dagster/run_key"] for r in runs)
    assert set(run_keys) == expected, set(run_keys) ^ expected
    assert set(run_keys.values()) == {1}, {k: n for k, n in run_keys.items() if n > 1}
    partitions = Counter(r.tags["dagster/partition"] for r in runs)
    assert len(partitions) == len(runs)
    assert Counter(r.tags["together/checkpoint_id"] for r in runs) == Counter(
        {c: 1 for c in saver.checkpoints}
    )
    mats = instance.fetch_materializations(dg.AssetKey("evaluation"), limit=1000).records
    assert Counter(m.asset_materialization.partition for m in mats) == partitions
    # The kills did land inside ticks: the daemon found each one dangling and closed it.
    by_id = {t.tick_id: t for t in sensor_ticks(instance, SENSOR, statuses=None)}
    assert [by_id[i].status for i in killed] == [TickStatus.SKIPPED] * 3
