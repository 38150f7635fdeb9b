"""The layering rules, checked in fresh interpreters: imports point down, never up."""

import subprocess
import sys
from pathlib import Path

import pytest

import rl_sessions_dagster


def modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("rl_sessions_dagster.api", {"dagster", "rl_sessions_dagster.core"}),
        ("rl_sessions_dagster.core", {"dagster", "rl_sessions_dagster.resource"}),
        ("rl_sessions_dagster.testing", {"dagster", "rl_sessions_dagster.api"}),
        ("rl_sessions_dagster", {"dagster"}),
    ],
)
def test_layer_does_not_import_upwards(module, forbidden):
    loaded = modules_after_import(module)
    assert not (forbidden & loaded), f"{module} pulls in {sorted(forbidden & loaded)}"


def test_core_source_does_no_io():
    """The core imports API models (plain pydantic) but never an HTTP or Dagster module."""
    core = Path(rl_sessions_dagster.__file__).parent / "core"
    for path in core.glob("*.py"):
        text = path.read_text()
        for word in ("import httpx", "import dagster", "from dagster", "from ..api.client",
                     "import socket", "import requests"):
            assert word not in text, f"{path.name} has '{word}'"


def test_lazy_top_level_exports_resolve():
    assert set(rl_sessions_dagster.__all__) - {"__version__"} == set(rl_sessions_dagster._EXPORTS)
    for name in rl_sessions_dagster._EXPORTS:
        assert getattr(rl_sessions_dagster, name) is not None
