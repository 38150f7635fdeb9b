"""The real dagster-daemon: a resource_ready event launches a training run, the run is then
terminated through the instance (as the UI's "Terminate" does), and nothing is left running
or billing that the run started."""

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

from ..daemon_defs import TRAIN_MODEL, TRIGGER_MODEL, daemon_env
from .conftest import API_KEY

ROOT = Path(__file__).resolve().parents[2]
SENSOR = "together_rl_model_resource_sensor"
# Generous ceilings for a loaded machine; each wait returns as soon as its event happened.
pytestmark = [pytest.mark.daemon, pytest.mark.slow, pytest.mark.timeout(1500)]


def test_terminated_training_run_leaves_nothing_billing(sim, tmp_path):
    world = sim.world
    home = prepare_dagster_home(tmp_path / "home")
    env = daemon_env("training", sim.base_url, API_KEY)
    module = "tests.daemon_defs"
    with dagster_daemon(home, module, working_directory=ROOT, env=env) as proc:
        instance = dg.DagsterInstance.from_config(str(home))
        wait_for(lambda: sensor_ticks(instance, SENSOR), 300, "the first resource-sensor tick")
        trigger = world.create_model_resource(TRIGGER_MODEL)

        def training_session():
            running = [
                s
                for s in world.sessions()
                if s["base_model"] == TRAIN_MODEL and s["status"].endswith("RUNNING")
            ]
            return running[0] if running else None

        session = wait_for(training_session, 300, "the training session RUNNING")
        (run,) = instance.get_runs()
        assert run.tags["dagster/run_key"] == f"resource_ready:{trigger}"
        assert instance.run_launcher.terminate(run.run_id)

        def finished():
            r = instance.get_run_by_id(run.run_id)
            return r if r.is_finished else None

        ended = wait_for(finished, 300, "the terminated run to finish")
        assert ended.status == dg.DagsterRunStatus.CANCELED
        assert world.session(session["id"])["status"].endswith(("STOPPING", "STOPPED"))
        own = session["model_resources_id"]
        assert world.model_resource(own)["status"].endswith(("STOPPING", "STOPPED"))
        assert world.billing_resources() == [trigger]  # only the one the test made
        # A few more ticks: the event is not turned into a second run.
        n = len(sensor_ticks(instance, SENSOR))
        wait_for(lambda: len(sensor_ticks(instance, SENSOR)) >= n + 2, 300, "two more ticks")
        assert len(instance.get_runs()) == 1
        pgid = proc.pid
    assert not group_alive(pgid)
