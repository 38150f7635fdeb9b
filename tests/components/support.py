"""What the Component tests share: Definitions from a YAML string, and `dg` in a subprocess."""

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
