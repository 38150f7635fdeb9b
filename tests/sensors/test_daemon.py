"""The real dagster-daemon, the simulator on loopback, runs launched end to end."""

from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    sensor_ticks,
    wait_for,
)

from ..daemon_defs import daemon_env
from .conftest import API_KEY

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.daemon, pytest.mark.slow]
# Ceilings, not expectations: every wait returns as soon as its event happens. Sized for a
# machine several times slower than an idle 2-core one (a loaded daemon takes ~20 s to start).
DAEMON_START = 240
PROGRESS = 300


@pytest.mark.timeout(900)
def test_daemon_launches_one_run_per_event(sim, tmp_path, dagster_storage):
    world = sim.world
    sid = world.create_session(display_name="daemon-run")
    other = world.create_session(display_name="to-stop")
    home = prepare_dagster_home(tmp_path / "home", storage=dagster_storage)
    env = daemon_env("sessions", sim.base_url, API_KEY)
    with dagster_daemon(home, "tests.daemon_defs", working_directory=ROOT, env=env) as proc:
        instance = dg.DagsterInstance.from_config(str(home))
        wait_for(
            lambda: sensor_ticks(instance, "together_rl_checkpoint_sensor"),
            DAEMON_START,
            "the first checkpoint-sensor tick",
        )
        wait_for(
            lambda: sensor_ticks(instance, "together_rl_session_status_sensor"),
            DAEMON_START,
            "the first status-sensor tick",
        )
        world.advance_steps(sid, 5)
        c1 = world.add_inference_checkpoint(sid)
        world.advance_steps(sid, 5)
        c2 = world.add_inference_checkpoint(sid)
        world.stop_session(other, immediate=True)

        def finished_runs():
            runs = instance.get_runs()
            done = [r for r in runs if r.status == dg.DagsterRunStatus.SUCCESS]
            return runs if len(done) >= 3 else None

        runs = wait_for(finished_runs, PROGRESS, "three successful runs")
        by_job: dict[str, list] = {}
        for run in runs:
            by_job.setdefault(run.job_name, []).append(run)
        assert sorted(r.tags["together/checkpoint_id"] for r in by_job["evaluation_job"]) == sorted(
            [c1, c2]
        )
        assert {r.tags["together/event"] for r in by_job["evaluation_job"]} == {
            "checkpoint_registered"
        }
        (report_run,) = by_job["report_job"]
        assert report_run.tags["together/session_id"] == other
        assert report_run.tags["dagster/run_key"] == f"session_stopped:{other}"
        partitions = {r.tags["dagster/partition"] for r in by_job["evaluation_job"]}
        assert set(instance.get_dynamic_partitions("together_rl_checkpoints")) == partitions
        mats = instance.fetch_materializations(
            dg.AssetKey(["together", "rl_inference_checkpoint"]), limit=10
        ).records
        assert {m.asset_materialization.metadata["checkpoint_id"].value for m in mats} == {c1, c2}
        assert {m.asset_materialization.partition for m in mats} == partitions
        # A few more ticks: nothing is launched twice.
        n_ticks = len(sensor_ticks(instance, "together_rl_checkpoint_sensor"))
        wait_for(
            lambda: len(sensor_ticks(instance, "together_rl_checkpoint_sensor")) >= n_ticks + 2,
            PROGRESS,
            "two more ticks",
        )
        assert len(instance.get_runs()) == 3
        pgid = proc.pid
    assert not group_alive(pgid)
