"""A failed per-checkpoint run heals by itself: the real daemon, on a Dagster instance in
PostgreSQL with ``run_retries`` on, launches it again (the job's ``dagster/max_retries`` tag),
while the sensor still requests each checkpoint exactly once.

The first run of every checkpoint fails on purpose; in the end every checkpoint has exactly
one successful run (a retry of the failed one) and one materialization.
"""

from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    wait_for,
)
from tests.daemon_defs import daemon_env

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-retry-CANARY-2718"
pytestmark = [pytest.mark.daemon, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(1500)]


def test_failed_evaluation_runs_are_retried_by_the_daemon(pg_server, pg_database, tmp_path):
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    home = prepare_dagster_home(tmp_path / "home", storage=pg_server.dagster_storage(pg_database))
    # As in deploy/dagster.yaml, but no instance-wide retries: the job's tag asks for them.
    with (home / "dagster.yaml").open("a") as f:
        f.write("run_retries:\n  enabled: true\n  max_retries: 0\n")
    with RLSimulator(api_key=API_KEY, seed=3) as sim:
        sid = sim.world.create_session(display_name="retries")
        env = daemon_env("retries", sim.base_url, API_KEY, RL_FLAKY_DIR=str(flaky))
        with dagster_daemon(home, "tests.daemon_defs", working_directory=ROOT, env=env) as proc:
            instance = dg.DagsterInstance.from_config(str(home))
            wait_for(lambda: sim.requests.count("GET", "/v1/rl/training-sessions") >= 2, 300,
                     "the first sensor tick")  # fmt: skip
            checkpoints = []
            for _ in range(2):
                sim.world.advance_steps(sid, 10)
                checkpoints.append(sim.world.add_inference_checkpoint(sid))

            def healed():
                ok = {
                    r.tags.get("together/checkpoint_id")
                    for r in instance.get_runs()
                    if r.status == dg.DagsterRunStatus.SUCCESS
                }
                return set(checkpoints) <= ok

            wait_for(healed, 600, "a successful run of every checkpoint")
            pgid = proc.pid
    assert not group_alive(pgid)

    runs = list(instance.get_runs())
    by_status = Counter((r.tags["together/checkpoint_id"], r.status) for r in runs)
    assert by_status == Counter(
        {(c, s): 1 for c in checkpoints for s in (dg.DagsterRunStatus.FAILURE,
                                                  dg.DagsterRunStatus.SUCCESS)}
    )  # fmt: skip
    failed = {r.tags["together/checkpoint_id"]: r for r in runs if r.status.value == "FAILURE"}
    for run in runs:
        if run.status == dg.DagsterRunStatus.SUCCESS:
            # The success is the daemon's retry of the failed run, not a new sensor request.
            checkpoint = run.tags["together/checkpoint_id"]
            assert run.tags["dagster/parent_run_id"] == failed[checkpoint].run_id
            assert run.tags["dagster/partition"] == failed[checkpoint].tags["dagster/partition"]
            assert run.tags["dagster/retry_number"] == "1"
    mats = instance.fetch_materializations(dg.AssetKey("flaky_evaluation"), limit=10).records
    key_of = {r.tags["together/checkpoint_id"]: r.tags["dagster/partition"] for r in runs}
    assert Counter(m.asset_materialization.partition for m in mats) == Counter(
        key_of[c] for c in checkpoints
    )
    assert {f.name for f in flaky.iterdir()} == set(checkpoints)
