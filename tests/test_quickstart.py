"""The README's quick start, run as written: its bash block, read from README.md, runs in a
temporary folder, with its defs.yaml (the README's YAML block, verbatim) and its dataset. Only
what cannot run here is substituted: ``rl-sessions-dagster`` resolves to a wheel built from
this checkout (``UV_FIND_LINKS``; dagster itself comes from the registry), the API key is the
simulator's, and ``dg dev`` becomes the real ``dagster-daemon`` plus a one-shot ``dg launch``
of the sessions table. The project then reaches an evaluation of every checkpoint, a report
of the finished session, the sweep's champion and a filled sessions table."""

import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    prepare_dagster_home,
    sensor_ticks,
    wait_for,
)
from tests.components.support import BIN
from tests.components.test_yaml_only_e2e import (
    EVAL_KEY,
    REPORT_KEY,
    assert_every_checkpoint_evaluated_once,
    assert_the_champion_follows_the_evaluations,
    latest_storage_id,
    records,
)

pytestmark = [pytest.mark.daemon, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
API_KEY = "sk-quickstart-CANARY-0123456789"
TABLE_KEY = dg.AssetKey(["together", "rl_sessions_table"])
# Ceilings, not expectations: each wait returns as soon as its event happens.
DAEMON_START = 240
PROGRESS = 600


def quick_start() -> tuple[list[str], str]:
    """The quick start's bash lines and its defs.yaml, as the README has them."""
    section = README.split("## Quick start")[1].split("\n## ")[0]
    (commands,) = [
        b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if "create-dagster" in b
    ]
    (defs_yaml,) = [
        b
        for b in re.findall(r"```yaml\n(.*?)```", section, re.S)
        if b.startswith("# src/my_rl/defs/together_rl/defs.yaml\n")
    ]
    return commands.splitlines(), defs_yaml


def script(lines: list[str], defs_yaml: Path) -> str:
    """The README's lines up to ``dg dev``; the comment that says to replace defs.yaml becomes
    that copy (the path it names is the one the YAML block's first line names)."""
    out = ["set -euo pipefail"]
    assert lines[-1].split("#")[0].strip() == "dg dev"
    for line in lines[:-1]:
        if m := re.match(r"# replace (\S+) with the file below", line):
            assert m.group(1) == "src/my_rl/defs/together_rl/defs.yaml"
            out.append(f"cp {defs_yaml} {m.group(1)}")
        elif line.startswith("export TOGETHER_API_KEY="):
            out.append(f"export TOGETHER_API_KEY={API_KEY}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without the test venv's marks (a user's shell has none), with
    create-dagster and uv on PATH."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and k != "PYTHONPATH"}
    env = {k: v for k, v in env.items() if not k.startswith("UV_") or k == "UV_CACHE_DIR"}
    uv = shutil.which("uv")
    assert uv is not None, "uv is needed: the README's commands use it"
    env["PATH"] = os.pathsep.join([str(BIN), str(Path(uv).parent), env.get("PATH", "")])
    env.pop("TOGETHER_API_KEY", None)
    return {**env, "NO_COLOR": "1", "COLUMNS": "200", **extra}


def build_wheel(out: Path) -> Path:
    done = subprocess.run(
        ["uv", "build", "--wheel", "-o", str(out), str(ROOT)],
        env=clean_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("rl_sessions_dagster-*.whl")
    return wheel


@pytest.mark.timeout(1800)
def test_the_readme_quick_start_runs_as_written(tmp_path):
    lines, defs_yaml = quick_start()
    wheels = tmp_path / "wheels"
    build_wheel(wheels)
    (tmp_path / "defs.yaml").write_text(defs_yaml)
    work = tmp_path / "work"
    work.mkdir()
    with RLSimulator(api_key=API_KEY, seed=29) as sim:
        env = clean_env(UV_FIND_LINKS=str(wheels), TOGETHER_BASE_URL=sim.base_url)
        done = subprocess.run(
            ["bash", "-c", script(lines, tmp_path / "defs.yaml")],
            cwd=work, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "All definitions loaded successfully" in done.stdout + done.stderr
        assert sim.requests.count() == 0  # checking made no API call
        project = work / "my-rl"
        lock = (project / "uv.lock").read_text()
        # the package came from this checkout's wheel, not from a registry
        assert re.search(
            rf'name = "rl-sessions-dagster"\nversion = "[^"]+"\nsource = {{ registry = "{wheels}" }}',
            lock,
        ), lock
        assert 'requires-python = ">=3.11,' in (project / "pyproject.toml").read_text()
        folder = project / "src" / "my_rl" / "defs" / "together_rl"
        assert (folder / "defs.yaml").read_text() == defs_yaml

        world = sim.world
        a = world.create_session(display_name="sweep-a")
        b = world.create_session(display_name="sweep-b")
        world.create_session(display_name="other-c")  # outside the filter: never evaluated
        home = prepare_dagster_home(tmp_path / "home")
        run_env = {"TOGETHER_API_KEY": API_KEY, "TOGETHER_BASE_URL": sim.base_url}
        with dagster_daemon(home, "my_rl.definitions", working_directory=project / "src",
                            env=run_env):  # fmt: skip
            instance = dg.DagsterInstance.from_config(str(home))
            wait_for(
                lambda: sensor_ticks(instance, "together_rl_events"), DAEMON_START, "first tick"
            )
            expected: set[str] = set()
            for session, steps in ((a, 10), (b, 20), (a, 10)):
                world.advance_steps(session, steps)
                expected.add(world.add_inference_checkpoint(session))
            world.stop_session(a, immediate=True)

            def evaluated():
                runs = [r for r in instance.get_runs() if r.job_name == "evaluate_checkpoint"]
                done = {r.tags["together/checkpoint_id"]: r for r in runs if r.is_success}
                return done if set(done) >= expected else None

            done_runs = wait_for(evaluated, PROGRESS, f"{len(expected)} evaluations")
            wait_for(
                lambda: any(m.metadata["session_id"].value == a
                            for m in records(instance, REPORT_KEY)),
                PROGRESS, "the report of the stopped session",
            )  # fmt: skip
            wait_for(
                lambda: (
                    latest_storage_id(instance, dg.AssetKey(["together", "sweep_champion"]))
                    > latest_storage_id(instance, EVAL_KEY)
                ),
                PROGRESS,
                "the champion sensor to fold the last evaluation",
            )
            wait_for(
                lambda: all(r.is_finished for r in instance.get_runs()), PROGRESS, "runs finished"
            )
            assert_every_checkpoint_evaluated_once(
                instance, {done_runs[c].tags["dagster/partition"] for c in expected}
            )
            reports = {m.metadata["session_id"].value: m.metadata["status"].value
                       for m in records(instance, REPORT_KEY)}  # fmt: skip
            assert reports == {a: "STOPPED"}
            assert_the_champion_follows_the_evaluations(instance)

            # The sync's schedule is on (`running: true`); one launch stands in for its tick.
            launched = subprocess.run(
                [str(project / ".venv" / "bin" / "dg"), "launch", "--assets", "together/rl_sessions_table"],
                cwd=project, env=clean_env(DAGSTER_HOME=str(home), **run_env),
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert launched.returncode == 0, launched.stdout + launched.stderr
            assert API_KEY not in launched.stdout + launched.stderr
            (table,) = records(instance, TABLE_KEY)
            assert table.metadata["dagster/row_count"].value == 3
        with sqlite3.connect(home / "together_rl_sync.sqlite") as db:
            names = {n for (n,) in db.execute("SELECT display_name FROM rl_sessions")}
        assert names == {"sweep-a", "sweep-b", "other-c"}
        assert API_KEY not in (home / "daemon.log").read_text()
