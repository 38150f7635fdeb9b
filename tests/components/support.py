"""What the Component tests share: Definitions from a YAML string, `dg` in a subprocess, and a
project made by ``create-dagster`` to run it in."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from rl_sessions_dagster import TogetherRLComponent

#: The venv's scripts (`dg`, `create-dagster`), whichever Python runs the tests.
BIN = Path(sys.executable).parent


def defs_for(yaml: str, *assets: dg.AssetsDefinition) -> dg.Definitions:
    """The Component's Definitions from YAML, beside the user's own assets it routes to."""
    component = TogetherRLComponent.resolve_from_yaml(yaml)
    return dg.Definitions.merge(
        dg.build_defs_for_component(component=component), dg.Definitions(assets=list(assets))
    )


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A CLI call in a scaffolded project, with no API key: checking and loading must not need it."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(cwd / "src"),
        "NO_COLOR": "1",
    }
    env.pop("TOGETHER_API_KEY", None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def scaffolded_project(root: Path, name: str) -> Path:
    """A project made by ``create-dagster`` (offline: ``--no-uv-sync``) under ``root``."""
    made = run([str(BIN / "create-dagster"), "project", "--no-uv-sync", name], root)
    assert made.returncode == 0, made.stdout + made.stderr
    return root / name


def component_folder(project: Path) -> Path:
    """``defs/rl`` of a scaffolded project, the folder its ``defs.yaml`` goes in."""
    folder = project / "src" / project.name.replace("-", "_") / "defs" / "rl"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def dg_check(project: Path, text: str, what: str) -> subprocess.CompletedProcess[str]:
    """``dg check <what>`` with ``text`` as the project's ``defs/rl/defs.yaml``."""
    (component_folder(project) / "defs.yaml").write_text(text)
    return run([str(BIN / "dg"), "check", what], project)
