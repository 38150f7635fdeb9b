"""The real dagster-daemon, SIGKILLed (whole process group) in the middle of sensor ticks and
restarted, while the simulated world keeps saving checkpoints: at the end every checkpoint was
evaluated exactly once.

Kills are aimed at a tick in progress (a STARTED tick, slowed by a 1 s delay on the list
calls) while no run is executing: with the DefaultRunLauncher a run lives in the daemon's
process group, and Dagster cannot tell that a SIGKILLed run worker died (no run-worker health
check), so killing a run would test Dagster's run monitoring, not this library.
"""

import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.scheduler.instigation import TickStatus

from rl_sessions_dagster.testing.daemon import dagster_daemon, group_alive, prepare_dagster_home

from .conftest import API_KEY, FINISHED_TICK, sensor_ticks, wait_for

ROOT = Path(__file__).resolve().parents[2]
SENSOR = "together_rl_checkpoint_sensor"
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
pytestmark = pytest.mark.daemon


class Saver:
    """Saves an inference checkpoint every ``pace`` seconds on one of ``sessions``; one in
    three is registered only at the next move (registration lag)."""

    def __init__(self, world, sessions: list[str], pace: float) -> None:
        self.world, self.sessions, self.pace = world, sessions, pace
        self.checkpoints: dict[str, str] = {}
        self._lagging: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-saver", daemon=True)
        self._n = 0

    def _run(self) -> None:
        while not self._stop.wait(self.pace):
            self.save()

    def save(self) -> None:
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

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        for cid in self._lagging:
            self.world.register_checkpoint(cid)
        self._lagging.clear()


def in_flight(instance: dg.DagsterInstance) -> list:
    return list(instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT)))


def kill_mid_tick(instance, proc, rng: random.Random, *, after_progress: bool) -> int:
    """SIGKILL the daemon's process group while a sensor tick is running; returns the tick id."""
    known = {t.tick_id for t in sensor_ticks(instance, SENSOR)}
    if after_progress:
        wait_for(
            lambda: any(
                t.tick_id not in known and t.status == TickStatus.SUCCESS
                for t in sensor_ticks(instance, SENSOR)
            ),
            60,
            "a tick of this daemon that launched runs",
        )

    def started_tick():
        ticks = sensor_ticks(instance, SENSOR)
        newest = ticks[0] if ticks else None
        if newest is None or newest.status != TickStatus.STARTED or newest.tick_id in known:
            return None
        # Young enough that the sensor function is still reading the (slowed) API, so no run
        # of this tick can have been launched before the kill.
        young = time.time() - newest.timestamp < 0.6
        return newest if young and not in_flight(instance) else None

    tick = wait_for(started_tick, 60, "a fresh tick with no run executing", interval=0.05)
    time.sleep(rng.uniform(0.05, 0.7))  # the tick needs >= 2 s: two list calls delayed 1 s
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not group_alive(proc.pid), 10, "the killed process group to be gone")
    return tick.tick_id


def test_sigkilled_daemon_evaluates_every_checkpoint_exactly_once(sim, tmp_path):
    world = sim.world
    sessions = [world.create_session(display_name=f"restart-{i}") for i in range(2)]
    world.add_inference_checkpoint(sessions[0])  # history: never evaluated
    # Every tick reads two lists; a 1 s delay on each makes a tick long enough to kill inside.
    sim.faults.add(delay_s=1.0, method="GET", path="/v1/rl/training-sessions")
    home = prepare_dagster_home(tmp_path / "home")
    env = {"TOGETHER_API_KEY": API_KEY, "TOGETHER_BASE_URL": sim.base_url}
    saver = Saver(world, sessions, pace=3.5)  # a launch takes ~3 s; keep the queue short
    rng = random.Random(3)
    killed: list[int] = []
    pgids: list[int] = []
    # Create the SQLite storages before any daemon starts: two processes initialising a fresh
    # DAGSTER_HOME at once can stamp alembic_version twice ("more than one head present").
    instance = dg.DagsterInstance.from_config(str(home))

    def daemon(life: int):
        return dagster_daemon(
            home,
            "tests.reliability.daemon_defs",
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
                        90,
                        "the first (baseline) tick",
                    )
                    saver.start()
                # Life 1 is killed during its very first tick; the others after some progress.
                killed.append(kill_mid_tick(instance, proc, rng, after_progress=life != 1))

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
                wait_for(lambda: not missing() and not in_flight(instance), 90, "evaluations")
            except AssertionError:
                raise AssertionError(
                    f"{len(missing())} of {len(expected)} checkpoints never evaluated: "
                    f"{sorted(missing())}; home: {home}"
                ) from None
            n_ticks = len(sensor_ticks(instance, SENSOR, FINISHED_TICK))
            wait_for(
                lambda: len(sensor_ticks(instance, SENSOR, FINISHED_TICK)) > n_ticks,
                30,
                "one more tick",
            )
            wait_for(lambda: not in_flight(instance), 30, "no run in flight")
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
    by_id = {t.tick_id: t for t in sensor_ticks(instance, SENSOR)}
    assert [by_id[i].status for i in killed] == [TickStatus.SKIPPED] * 3
