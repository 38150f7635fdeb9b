"""API retries inside a run reach that run's event log, and the run's metadata counts them
(issue #18 item 4). A long sync says how far it got while it runs.

Real runs (``dg.materialize`` on a real instance) against the simulator, which answers the
first list requests with 503. The event log is read back from the instance; the assertions are
on the structure of the lines (endpoint, status, attempt n/max, a wait), never on durations.
"""

import re
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.assets.spend import build_spend_asset
from rl_sessions_dagster.testing import RLSimulator

#: Recognisable and long enough to be scrubbed: it must appear in no line, no file.
KEY = "sk-runlog-CANARY-7d1e55"
pytestmark = pytest.mark.sim(api_key=KEY)
SESSIONS = "GET /v1/rl/training-sessions"
RESOURCES = "GET /v1/rl/model-resources"
RETRY = re.compile(
    r"^Together API retry: (?P<endpoint>GET /v1/rl/[\w/-]+) failed with HTTP (?P<status>\d+) "
    r"\((?P<error>\w+)\) on attempt (?P<attempt>\d+)/(?P<max>\d+); retrying in "
    r"(?P<wait>\d+\.\d\d) s \(backoff\)"
)


def resource(sim: RLSimulator) -> TogetherRLResource:
    return TogetherRLResource(
        api_key=KEY,
        base_url=sim.base_url,
        backoff_initial=0.01,
        backoff_max=0.02,
        backoff_jitter=0.01,
    )


def run(
    asset: dg.AssetsDefinition, sim: RLSimulator, instance, **config
) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        [asset],
        instance=instance,
        resources={"together": resource(sim)},
        run_config={"ops": {asset.op.name: {"config": config}}},
    )
    assert result.success
    return result


def messages(instance: dg.DagsterInstance, run_id: str) -> list[dg.EventLogEntry]:
    return [e for e in instance.all_logs(run_id) if e.user_message]


def retry_entries(instance, run_id: str) -> list[tuple[dg.EventLogEntry, re.Match]]:
    found = []
    for entry in messages(instance, run_id):
        match = RETRY.match(entry.user_message)
        if match:
            found.append((entry, match))
    return found


def assert_key_nowhere(instance: dg.DagsterInstance, run_id: str) -> None:
    """Not in any event of the run, nor in any file of the instance (event log database,
    captured stdout/stderr of the run)."""
    for entry in instance.all_logs(run_id):
        assert KEY not in repr(entry)
    for path in Path(instance.root_directory).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.sim(seed=3)
def test_sync_run_logs_each_retry_and_counts_them(sim, instance, tmp_path: Path) -> None:
    sim.world.populate(12, 2)
    fault = sim.faults.add(SESSIONS, status=503, times=2)
    asset = build_session_sync_asset()
    result = run(asset, sim, instance, db_path=str(tmp_path / "sync.sqlite"))

    entries = retry_entries(instance, result.run_id)
    assert fault.applied == 2 and len(entries) == 2
    for (entry, match), attempt in zip(entries, ("1", "2"), strict=True):
        assert entry.level == 30  # WARNING
        assert entry.step_key == asset.op.name  # attributed to the step that retried
        assert (match["endpoint"], match["status"], match["error"]) == (
            SESSIONS,
            "503",
            "ServerError",
        )
        assert (match["attempt"], match["max"]) == (attempt, "4")
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    assert mat.metadata["api_retries"].value == fault.applied
    assert mat.metadata["api_requests"].value == sim.requests.count(
        "GET", "/v1/rl/training-sessions"
    )
    final = [
        e.user_message for e in messages(instance, result.run_id) if "synced" in e.user_message
    ]
    assert len(final) == 1 and "(2 retried)" in final[0]
    assert_key_nowhere(instance, result.run_id)


@pytest.mark.sim(seed=3)
def test_a_clean_sync_counts_zero_retries(sim, instance, tmp_path: Path) -> None:
    sim.world.populate(3, 1)
    asset = build_session_sync_asset()
    result = run(asset, sim, instance, db_path=str(tmp_path / "sync.sqlite"))
    assert retry_entries(instance, result.run_id) == []
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    assert mat.metadata["api_retries"].value == 0


@pytest.mark.sim(seed=3)
def test_a_long_sync_reports_progress_as_it_goes(sim, instance, tmp_path: Path) -> None:
    """progress_seconds=0: a line per session, each before the final line, counting up."""
    sim.world.populate(6, 1)
    sim.faults.add(SESSIONS, status=503, nth=[2])  # the second page is retried once
    asset = build_session_sync_asset()
    result = run(
        asset,
        sim,
        instance,
        db_path=str(tmp_path / "sync.sqlite"),
        page_size=2,
        progress_seconds=0,
    )
    lines = [e.user_message for e in messages(instance, result.run_id)]
    progress = [line for line in lines if line.startswith("sync in progress:")]
    final = next(i for i, line in enumerate(lines) if line.startswith("synced "))
    assert len(progress) == 6
    assert all(lines.index(line) < final for line in progress)
    parsed = [
        re.match(
            r"sync in progress: (\d+) page\(s\) read, (\d+) sessions and (\d+) checkpoints "
            r"so far, (\d+) API request\(s\) retried",
            line,
        )
        for line in progress
    ]
    assert all(parsed)
    counts = [tuple(int(g) for g in m.groups()) for m in parsed if m]
    assert [c[1] for c in counts] == [1, 2, 3, 4, 5, 6]  # sessions so far
    assert [c[0] for c in counts] == [1, 1, 2, 2, 3, 3]  # pages of 2
    assert counts[0][3] == 0 and counts[-1][3] == 1  # the retry shows up as it happens
    assert all(c[2] >= 0 for c in counts)


@pytest.mark.sim(seed=3)
def test_spend_run_logs_each_retry_and_counts_them(sim, instance, tmp_path: Path) -> None:
    sim.world.create_model_resource("Qwen/Qwen3-8B")
    fault = sim.faults.add(RESOURCES, status=503, times=1)
    asset = build_spend_asset()
    result = run(asset, sim, instance, db_path=str(tmp_path / "spend.sqlite"))
    ((entry, match),) = retry_entries(instance, result.run_id)
    assert entry.level == 30 and match["endpoint"] == RESOURCES and match["attempt"] == "1"
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    assert mat.metadata["api_retries"].value == fault.applied == 1
    assert mat.metadata["api_requests"].value >= 2
    assert_key_nowhere(instance, result.run_id)
