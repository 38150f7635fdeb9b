"""Secret hygiene, end to end: the example project on the real dagster-daemon against the
simulator, with a recognisable API key; then every place Dagster (or we) wrote anything is
searched for that key, in plain text and in the encodings a header or a log could hide it in.

The run includes what tends to leak: transient API failures (skip reasons), a failing sensor
tick and a failing run after the key is revoked (their exception texts), the CLI-launched sync
job, and the resource and client objects themselves.
"""

import base64
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.instigation_logger import get_instigation_log_records
from dagster._core.scheduler.instigation import TickStatus
from dagster._serdes import serialize_value

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api.errors import AuthenticationError
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import dagster_daemon, group_alive, prepare_dagster_home

from .conftest import API_KEY, FINISHED_TICK, sensor_ticks, wait_for

ROOT = Path(__file__).resolve().parents[2]
CKPT_SENSOR = "evaluate_new_checkpoints"
STATUS_SENSOR = "report_finished_sessions"
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])
pytestmark = [pytest.mark.e2e, pytest.mark.daemon]
# Ceilings, not expectations: every wait returns as soon as its event happens. Sized for a
# machine several times slower than an idle 2-core one (a loaded daemon takes ~20 s to start).
DAEMON_START = 240
PROGRESS = 300


def forms(secret: str) -> list[bytes]:
    """The key as bytes: plain, hex, UTF-16, and base64 at every alignment (as inside a
    base64-encoded ``Bearer <key>`` or basic-auth header)."""
    raw = secret.encode()
    out = [raw, raw.hex().encode(), secret.encode("utf-16-le")]
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw)
        skip = (pad * 8 + 5) // 6  # characters that also carry the padding bytes
        keep = (len(raw) * 8) // 6 - 1  # characters made only of the key's bits
        out.append(encoded[skip : skip + keep])
    return out


class Finder:
    """Collects every place the key shows up, with where it was found."""

    def __init__(self, secret: str) -> None:
        self.patterns = forms(secret)
        self.hits: list[str] = []
        self.searched = 0

    def text(self, where: str, value: object) -> None:
        self.bytes(where, str(value).encode("utf-8", errors="replace"))

    def bytes(self, where: str, data: bytes) -> None:
        self.searched += 1
        if any(p in data for p in self.patterns):
            self.hits.append(where)

    def tree(self, root: Path) -> int:
        files = [p for p in root.rglob("*") if p.is_file()]
        for path in files:
            self.bytes(str(path), path.read_bytes())
        return len(files)


def cli(args: list[str], home: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("dagster"))
    return subprocess.run(
        [exe, *args], cwd=ROOT, env={**os.environ, **env, "DAGSTER_HOME": str(home)},
        capture_output=True, text=True, timeout=PROGRESS, start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_api_key_appears_nowhere_dagster_or_the_library_writes(tmp_path):
    finder = Finder(API_KEY)
    home = prepare_dagster_home(tmp_path / "home")
    instance = dg.DagsterInstance.from_config(str(home))  # storages exist before the daemon
    outputs: dict[str, str] = {}
    with RLSimulator(api_key=API_KEY, seed=42) as sim:
        env = {
            "TOGETHER_API_KEY": API_KEY,
            "TOGETHER_BASE_URL": sim.base_url,
            "RL_SENSOR_INTERVAL_SECONDS": "1",
        }
        with dagster_daemon(home, "example_repo.definitions", working_directory=ROOT, env=env) as d:
            # Positive control: the key is really there to be found (the daemon's environment).
            # Right after fork the child still shows the parent's environment: wait for exec.
            wait_for(
                lambda: any(
                    p in Path(f"/proc/{d.pid}/environ").read_bytes() for p in finder.patterns
                ),
                60,
                "the daemon's environment to hold the key (positive control)",
            )
            wait_for(
                lambda: (
                    sensor_ticks(instance, CKPT_SENSOR, [TickStatus.SKIPPED])
                    and sensor_ticks(instance, STATUS_SENSOR, [TickStatus.SKIPPED])
                ),
                DAEMON_START,
                "both sensors' first tick",
            )
            # Transient failures: their messages land in skip reasons. The list fails until a
            # sensor has skipped a tick for it: a fixed number of failures could be absorbed by
            # the retries of other readers of the same endpoint (the idle guard, runs).
            outage = sim.faults.add("GET /v1/rl/training-sessions", status=503)

            def outage_skipped() -> bool:
                return any(
                    "unavailable" in (t.skip_reason or "")
                    for name in (CKPT_SENSOR, STATUS_SENSOR)
                    for t in sensor_ticks(instance, name, [TickStatus.SKIPPED])
                )

            wait_for(outage_skipped, PROGRESS, "a tick skipped for the outage")
            sim.faults.remove(outage)
            sim.faults.add("GET /v1/rl/training-sessions", drop=True, times=2)
            sim.faults.add("GET /v1/rl/training-sessions", status=429, retry_after=0.1, times=2)
            # A small account: one session trains, saves checkpoints (one registered late) and
            # stops; one fails at creation.
            world = sim.world
            trains = world.create_session(
                display_name="canary-run",
                wandb={"project": "p", "url": "https://wandb.ai/a/p/runs/1"},
            )
            world.advance_steps(trains, 10)
            checkpoints = {world.add_inference_checkpoint(trains)}
            world.advance_steps(trains, 10)
            late = world.add_inference_checkpoint(trains, registered=False)
            checkpoints.add(late)
            born_failed = world.create_session(fail_at_creation=True)
            # Registered once a checkpoint tick begun after it was saved has ended: that tick
            # saw it unregistered (an event to wait for, not a sleep a slow tick could outlast).
            saved_at = time.time()
            wait_for(
                lambda: any(
                    t.timestamp > saved_at
                    for t in sensor_ticks(instance, CKPT_SENSOR, FINISHED_TICK)
                ),
                PROGRESS,
                "a checkpoint tick that saw the late checkpoint unregistered",
            )
            world.register_checkpoint(late)
            world.stop_session(trains, immediate=True)

            def finished(job: str) -> list:
                done = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)
                return [r for r in instance.get_runs() if r.job_name == job and r.status in done]

            wait_for(
                lambda: (
                    len(finished("evaluate_checkpoint")) >= len(checkpoints)
                    and len(finished("finished_session_report")) >= 2
                ),
                PROGRESS,
                "the evaluation and report runs",
            )
            sync = cli(
                ["asset", "materialize", "-m", "example_repo.definitions",
                 "--select", "together/rl_sessions_table"], home, env,
            )  # fmt: skip
            assert sync.returncode == 0, sync.stderr[-3000:]
            outputs["sync"] = sync.stdout + sync.stderr

            # The key is revoked: the sensors fail loudly, and so does an evaluation run.
            sim.api_key = "sk-live-ROTATED-0000"
            n_failed = len(sensor_ticks(instance, CKPT_SENSOR, [TickStatus.FAILURE]))
            wait_for(
                lambda: len(sensor_ticks(instance, CKPT_SENSOR, [TickStatus.FAILURE])) > n_failed,
                PROGRESS,
                "a failing tick after the key was revoked",
            )
            failing = cli(
                ["asset", "materialize", "-m", "example_repo.definitions",
                 "--select", "together/checkpoint_evaluation", "--partition",
                 sorted(instance.get_dynamic_partitions("together_rl_checkpoints"))[0]],
                home, env,
            )  # fmt: skip
            assert failing.returncode != 0
            outputs["failing run"] = failing.stdout + failing.stderr
            pgid = d.pid
        assert not group_alive(pgid)

    # What the run did (so that the scan below covers real content).
    runs = list(instance.get_runs())
    by_job: dict[str, list] = {}
    for run in runs:
        by_job.setdefault(run.job_name, []).append(run)
    assert {r.tags["together/checkpoint_id"] for r in by_job["evaluate_checkpoint"]} == checkpoints
    assert {r.tags["together/session_id"] for r in by_job["finished_session_report"]} == {
        trains,
        born_failed,
    }
    assert any(r.status == dg.DagsterRunStatus.FAILURE for r in runs)
    assert "401" in outputs["failing run"] or "Invalid API key" in outputs["failing run"]

    # 1. Every run: tags, config, the whole record; every event of its event log.
    for run in runs:
        finder.text(f"run {run.run_id} tags", run.tags)
        finder.text(f"run {run.run_id} config", run.run_config)
        finder.text(f"run {run.run_id}", serialize_value(run))
        for entry in instance.all_logs(run.run_id):
            where = f"run {run.run_id} event {entry.dagster_event_type}"
            finder.text(where, str(entry))
            finder.text(where + " message", entry.message)
            finder.text(where + " payload", serialize_value(entry))

    # 2. Every tick of every sensor and schedule: cursor, error, skip reason, log key, and the
    #    log lines the daemon stored for it (where the API retries are reported).
    failure_errors = []
    skip_reasons = []
    retry_lines = []
    for state in instance.all_instigator_state():
        finder.text(f"instigator {state.instigator_name} state", serialize_value(state))
        for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=10_000):
            where = f"tick {state.instigator_name}#{tick.tick_id}"
            finder.text(where + " cursor", tick.cursor)
            finder.text(where + " skip reason", tick.skip_reason)
            finder.text(where + " log key", tick.log_key)
            finder.text(where + " error", tick.error.to_string() if tick.error else "")
            finder.text(where, serialize_value(tick))
            records = get_instigation_log_records(instance, tick.log_key) if tick.log_key else []
            for record in records:
                finder.text(where + " log", record)
                if "Together API retry: GET /v1/rl/" in str(record.get("msg")):
                    retry_lines.append(record)
            if tick.status == TickStatus.FAILURE:
                failure_errors.append(tick.error.to_string())
            if tick.skip_reason:
                skip_reasons.append(tick.skip_reason)
    assert any("AuthenticationError" in e or "401" in e for e in failure_errors)
    assert any("unavailable" in s for s in skip_reasons), "the transient faults left no trace"
    assert retry_lines and all(r["levelname"] == "WARNING" for r in retry_lines)

    # 3. Every asset's materializations, observations and check evaluations.
    for key in instance.get_asset_keys():
        for record in instance.fetch_materializations(key, limit=1000).records:
            finder.text(f"materialization {key.to_user_string()}", serialize_value(record))
        for record in instance.fetch_observations(key, limit=1000).records:
            finder.text(f"observation {key.to_user_string()}", serialize_value(record))
    assert len(instance.fetch_materializations(EVAL_KEY, limit=100).records) >= len(checkpoints)

    # 4. Output of the CLI runs, and the objects a user might print.
    for name, text in outputs.items():
        finder.text(f"{name} output", text)
    resource = TogetherRLResource(api_key=API_KEY, base_url="http://127.0.0.1:9")
    finder.text("resource repr", repr(resource))
    finder.text("resource str", str(resource))
    with resource.get_client() as client:
        finder.text("client repr", repr(client))
        finder.text("client str", str(client))
        finder.text("client http headers", repr(client._http.headers))
    with RLSimulator(api_key="another-key") as other:
        client = TogetherRLResource(api_key=API_KEY, base_url=other.base_url).get_client()
        with client, pytest.raises(AuthenticationError) as info:
            client.list_sessions_page(limit=1)
    finder.text("401 error", f"{info.value!s} {info.value!r} {info.value.__dict__}")

    # 5. The raw bytes of everything under DAGSTER_HOME: SQLite files (and WAL), compute logs,
    #    the daemon log, the sync table.
    n_files = finder.tree(home)
    assert (home / "daemon.log").stat().st_size > 0 and n_files > 5

    assert finder.hits == [], f"the API key leaked into: {finder.hits}"
    assert finder.searched > 200


def test_the_search_finds_the_key_in_every_form():
    finder = Finder(API_KEY)
    for text in (
        f"Authorization: Bearer {API_KEY}",
        base64.b64encode(f"Bearer {API_KEY}".encode()).decode(),
        base64.b64encode(f"user:{API_KEY}".encode()).decode(),
        base64.b64encode(f"x{API_KEY}y".encode()).decode(),
        API_KEY.encode().hex(),
    ):
        finder.text(text[:12], text)
    finder.bytes("utf-16", f"key={API_KEY}".encode("utf-16-le"))
    assert len(finder.hits) == 6
    finder.text("clean", "sk-live-CANARY-0000 and Bearer *** and " + API_KEY[:-1])
    assert len(finder.hits) == 6
