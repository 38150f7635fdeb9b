"""The real dagster-daemon with a corrupted stored cursor (issue #8): the sensor restores the
newest readable cursor from its own tick history, so events that happened while the cursor
was broken each get exactly one run, and history stays history."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.core import TrackerState
from rl_sessions_dagster.core.state import CURSOR_VERSION
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    prepare_dagster_home,
    sensor_ticks,
    wait_for,
)

from ..daemon_defs import daemon_env
from .conftest import API_KEY

ROOT = Path(__file__).resolve().parents[2]
SENSOR = "together_rl_checkpoint_sensor"
# Ceilings are generous (a loaded 2-core machine starts a daemon in up to ~4 minutes); each
# wait returns as soon as its event happened.
pytestmark = [pytest.mark.daemon, pytest.mark.slow, pytest.mark.timeout(1800)]


def _stored_cursor(instance: dg.DagsterInstance) -> str | None:
    (state,) = [
        s
        for s in instance.all_instigator_state()
        if s.instigator_type.value == "SENSOR" and s.instigator_name == SENSOR
    ]
    return getattr(state.instigator_data, "cursor", None)


def _set_cursor_with_the_cli(home: Path, env: dict[str, str], value: str) -> None:
    dagster = Path(sys.executable).with_name("dagster")
    subprocess.run(
        [
            str(dagster),
            "sensor",
            "cursor",
            SENSOR,
            "--set",
            value,
            "-w",
            str(home / "workspace.yaml"),
        ],
        env={**os.environ, **env, "DAGSTER_HOME": str(home)},
        cwd=str(ROOT),
        check=True,
        capture_output=True,
        timeout=180,
    )


def test_corrupted_cursor_is_restored_from_tick_history_and_every_event_runs_once(sim, tmp_path):
    world = sim.world
    sid = world.create_session(display_name="cursor-history")
    history = world.add_inference_checkpoint(sid)  # before the first tick: never a run
    home = prepare_dagster_home(tmp_path / "home")
    env = daemon_env("sessions", sim.base_url, API_KEY)
    module = "tests.daemon_defs"
    instance = dg.DagsterInstance.from_config(str(home))

    def evaluation_runs() -> list[dg.DagsterRun]:
        return [r for r in instance.get_runs() if r.job_name == "evaluation_job"]

    with dagster_daemon(home, module, working_directory=ROOT, env=env):
        wait_for(lambda: sensor_ticks(instance, SENSOR), 300, "the first checkpoint-sensor tick")
        world.advance_steps(sid, 5)
        before = world.add_inference_checkpoint(sid)
        wait_for(
            lambda: [r for r in evaluation_runs() if r.status == dg.DagsterRunStatus.SUCCESS],
            300,
            "the run of the checkpoint saved before the corruption",
        )
    baseline = TrackerState.from_cursor(_stored_cursor(instance)).baseline_ms

    # While no daemon runs: events happen, and the stored cursor is corrupted.
    world.advance_steps(sid, 5)
    during = world.add_inference_checkpoint(sid)
    _set_cursor_with_the_cli(home, env, '{"v": 2, "b": "truncat')
    assert _stored_cursor(instance) == '{"v": 2, "b": "truncat'

    with dagster_daemon(home, module, working_directory=ROOT, env=env):
        world.advance_steps(sid, 5)
        after = world.add_inference_checkpoint(sid)

        def all_evaluated():
            done = {
                r.tags["together/checkpoint_id"]
                for r in evaluation_runs()
                if r.status == dg.DagsterRunStatus.SUCCESS
            }
            return done if {before, during, after} <= done else None

        wait_for(all_evaluated, 600, "runs for the checkpoints saved around the corruption")
        # A couple more ticks: nothing is launched twice.
        n = len(sensor_ticks(instance, SENSOR))
        wait_for(lambda: len(sensor_ticks(instance, SENSOR)) >= n + 2, 300, "two more ticks")
    partitions = sorted(r.tags["together/checkpoint_id"] for r in evaluation_runs())
    assert partitions == sorted([before, during, after])  # each once; history never
    assert history not in partitions
    restored = TrackerState.from_cursor(_stored_cursor(instance))
    assert restored.baseline_ms == baseline  # restored, not started over
    assert json.loads(_stored_cursor(instance) or "{}")["v"] == CURSOR_VERSION
