"""Issue #19's "done when", end to end: a project made by ``create-dagster`` that holds only a
``defs.yaml`` and a JSONL dataset passes ``dg check yaml`` and ``dg check defs``, and under the
real ``dagster-daemon`` (simulator on loopback, faults injected on the API and on the chat
calls):

* every checkpoint registered after the sensor's first tick gets exactly one evaluation run,
  which succeeds, and one evaluation materialization with a score;
* every finished session (one stopped, one failed) gets exactly one report, with its status;
* the sweep gets a champion, the best checkpoint, and its history of changes is exactly the
  replay of the evaluations in the order they landed (a better checkpoint landing later makes
  it change; the highest step is registered last).
"""

import json
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    sensor_ticks,
    wait_for,
)
from tests.components.support import BIN, run, scaffolded_project

pytestmark = [pytest.mark.daemon, pytest.mark.slow]

API_KEY = "sk-yaml-e2e-CANARY-0123456789"
SENSOR = "together_rl_events"
JOB = "evaluate_checkpoint"
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])
REPORT_KEY = dg.AssetKey(["together", "session_report"])
CHAMPION_KEY = dg.AssetKey(["together", "sweep_champion"])
REPORT_JOB = "together_rl_session_report"
# Ceilings, not expectations: each wait returns as soon as its event happens.
DAEMON_START = 240
PROGRESS = 420

DEFS_YAML = """\
type: rl_sessions_dagster.TogetherRLComponent

attributes:
  resource:
    max_attempts: 6                 # the faults below are retried, Retry-After honoured
  sessions:
    minimum_interval_seconds: 1
    running: true
  sync:
    enabled: false
  evaluation:
    dataset: eval.jsonl             # beside this defs.yaml
    prompt_template: "What is {a} + {b}? Answer with the number only."
    graders: [{type: numeric}]
    concurrency: 4
  report: {}                        # one report per finished session
  champion:                         # the best checkpoint of each sweep
    running: true
    minimum_interval_seconds: 1
"""

DATASET = "".join(
    json.dumps({"a": a, "b": b, "expected": a + b}) + "\n" for a in (3, 8, 21) for b in (4, 9, 15)
)


def make_project(root: Path) -> tuple[Path, str]:
    """``create-dagster project`` (works offline with --no-uv-sync), then the Component's
    defs.yaml scaffolded by ``dg`` and replaced by ours, and the dataset beside it."""
    project = scaffolded_project(root, "rl-yaml")
    dg_bin = str(BIN / "dg")
    done = run(
        [dg_bin, "scaffold", "defs", "rl_sessions_dagster.TogetherRLComponent", "rl"], project
    )
    assert done.returncode == 0, done.stdout + done.stderr
    folder = project / "src" / "rl_yaml" / "defs" / "rl"
    (folder / "defs.yaml").write_text(DEFS_YAML)
    (folder / "eval.jsonl").write_text(DATASET)
    written = {
        p.relative_to(project / "src" / "rl_yaml" / "defs") for p in folder.parent.rglob("*")
    }
    assert {p for p in written if p.suffix == ".py"} <= {Path("__init__.py")}  # YAML + JSONL only
    for check in ("yaml", "defs"):
        done = run([dg_bin, "check", check], project)
        assert done.returncode == 0, done.stdout + done.stderr
    return project, "rl_yaml.definitions"


def evaluation_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return [r for r in instance.get_runs() if r.job_name == JOB]


def assert_every_checkpoint_evaluated_once(instance: dg.DagsterInstance, expected: set[str]):
    runs = evaluation_runs(instance)
    assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(expected)
    assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    mats = instance.fetch_materializations(EVAL_KEY, limit=100).records
    assert sorted(m.asset_materialization.partition for m in mats) == sorted(expected)
    for m in mats:
        score = m.asset_materialization.metadata["score"].value
        assert isinstance(score, float) and 0.0 <= score <= 1.0


def records(instance: dg.DagsterInstance, key: dg.AssetKey) -> list:
    """Materializations of ``key``, in the order they landed."""
    found = instance.fetch_materializations(key, limit=1000, ascending=True).records
    return [r.asset_materialization for r in found if r.asset_materialization is not None]


def latest_storage_id(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    found = instance.fetch_materializations(key, limit=1).records
    return found[0].storage_id if found else 0


def assert_every_finished_session_reported_once(instance, statuses: dict[str, str]):
    runs = [r for r in instance.get_runs() if r.job_name == REPORT_JOB]
    assert sorted(r.tags["together/session_id"] for r in runs) == sorted(statuses)
    assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    reported = {m.metadata["session_id"].value: m.metadata["status"].value
                for m in records(instance, REPORT_KEY)}  # fmt: skip
    assert reported == statuses


def assert_the_champion_follows_the_evaluations(instance: dg.DagsterInstance) -> list[str]:
    """The oracle, written here: in landing order, the champion is the best so far (higher
    score; ties: earlier step, then smaller id); the asset records each change, in order."""
    best = None
    replay: list[str] = []
    for m in records(instance, EVAL_KEY):
        meta = m.metadata
        key = (-meta["score"].value, meta["step"].value, meta["checkpoint_id"].value)
        if best is None or key < best:
            best = key
            replay.append(meta["checkpoint_id"].value)
    champions = [m for m in records(instance, CHAMPION_KEY) if m.partition == "sweep"]
    assert champions, "no champion recorded for the sweep"
    changes = [m.metadata["champion_checkpoint_id"].value
               for m in champions if m.metadata["changed"].value]  # fmt: skip
    assert changes == replay
    assert champions[-1].metadata["champion_checkpoint_id"].value == replay[-1]
    return replay


@pytest.mark.timeout(1200)
def test_yaml_only_project_evaluates_every_checkpoint_once_on_the_daemon(tmp_path):
    project, module = make_project(tmp_path)
    with RLSimulator(api_key=API_KEY, seed=19) as sim:
        world = sim.world
        a = world.create_session(display_name="sweep-a")
        b = world.create_session(display_name="sweep-b")
        world.advance_steps(a, 5)
        world.add_inference_checkpoint(a)  # history: before the first tick, never announced
        home = prepare_dagster_home(tmp_path / "home")
        env = {"TOGETHER_API_KEY": API_KEY, "TOGETHER_BASE_URL": sim.base_url}
        with dagster_daemon(home, module, working_directory=project / "src", env=env) as proc:
            instance = dg.DagsterInstance.from_config(str(home))
            wait_for(lambda: sensor_ticks(instance, SENSOR), DAEMON_START, "the first tick")

            # Faults: the session list fails for a few ticks, chat calls are rate limited and
            # dropped at random (retried inside the evaluation), a checkpoint read fails once.
            sim.faults.add("GET /v1/rl/training-sessions", status=503, times=3)
            sim.faults.add("POST /v1/chat/completions", status=429, retry_after=0.05, rate=0.1)
            sim.faults.add("POST /v1/chat/completions", drop=True, rate=0.03)
            sim.faults.add("GET /v1/rl/checkpoints/{id}", status=502, times=1)

            expected: set[str] = set()  # checkpoint ids
            for session, n in ((a, 2), (b, 1)):
                for _ in range(n):
                    world.advance_steps(session, 10)
                    expected.add(world.add_inference_checkpoint(session))
            world.advance_steps(a, 10)
            lagging = world.add_inference_checkpoint(a, registered=False)  # registered later
            world.add_inference_checkpoint(b, registered=False)  # never registered: no run
            world.stop_session(a, immediate=True)
            world.register_checkpoint(lagging)
            expected.add(lagging)
            world.fail_session(b, message="boom")

            def all_evaluated():
                runs = evaluation_runs(instance)
                done = {r.tags["together/checkpoint_id"]: r for r in runs if r.is_success}
                return done if set(done) >= expected else None

            done = wait_for(all_evaluated, PROGRESS, f"{len(expected)} successful evaluations")
            reported = {a, b}
            wait_for(
                lambda: {r.tags["together/session_id"] for r in instance.get_runs()
                         if r.job_name == REPORT_JOB and r.is_success} >= reported,
                PROGRESS,
                "a report of each finished session",
            )  # fmt: skip
            wait_for(
                lambda: (
                    latest_storage_id(instance, CHAMPION_KEY)
                    > latest_storage_id(instance, EVAL_KEY)
                ),
                PROGRESS,
                "the champion sensor to fold the last evaluation",
            )
            partitions = {done[c].tags["dagster/partition"] for c in expected}
            # Quiet afterwards: two more ticks launch nothing new.
            n = len(sensor_ticks(instance, SENSOR))
            wait_for(lambda: len(sensor_ticks(instance, SENSOR)) >= n + 2, PROGRESS, "2 ticks")
            wait_for(
                lambda: all(r.is_finished for r in instance.get_runs()), PROGRESS, "runs finished"
            )
            assert_every_checkpoint_evaluated_once(instance, partitions)
            assert_every_finished_session_reported_once(instance, {a: "STOPPED", b: "ERROR"})
            assert_the_champion_follows_the_evaluations(instance)
            assert sim.faults.rules[0].applied == 3  # the API faults were really served
            pgid = proc.pid
        assert not group_alive(pgid)
        daemon_log = (home / "daemon.log").read_text()
        assert API_KEY not in daemon_log
