"""The public surface, pinned: the names each public package exports (``__all__``), written in
``tests/fixtures/exports.json``. A change to the surface is a deliberate edit of that file,
reviewed like any API change; it cannot happen by accident.

Regenerate after a deliberate change with
``python -m tests.test_exports > tests/fixtures/exports.json``.
"""

import importlib
import json
import sys
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).parent / "fixtures" / "exports.json"
PACKAGES = [
    "rl_sessions_dagster",
    "rl_sessions_dagster.api",
    "rl_sessions_dagster.assets",
    "rl_sessions_dagster.components",
    "rl_sessions_dagster.core",
    "rl_sessions_dagster.evaluation",
    "rl_sessions_dagster.partitions",
    "rl_sessions_dagster.resource",
    "rl_sessions_dagster.sensors",
    "rl_sessions_dagster.storage",
    "rl_sessions_dagster.testing",
    "rl_sessions_dagster.training",
]


def exports() -> dict[str, list[str]]:
    return {p: sorted(importlib.import_module(p).__all__) for p in PACKAGES}


def test_the_exported_names_are_the_pinned_ones():
    assert exports() == json.loads(SNAPSHOT.read_text())


def test_top_level_is_small():
    assert len(exports()["rl_sessions_dagster"]) <= 45


def test_subpackages_export_their_concepts_only():
    assert sum(len(names) for p, names in exports().items() if p != PACKAGES[0]) <= 60


def test_settings_dropped_from_all_stay_importable():
    """0.2.0 listed these in ``api.__all__``; code importing them keeps working."""
    from rl_sessions_dagster.api import API_KEY_ENV, DEFAULT_BASE_URL

    assert (API_KEY_ENV, DEFAULT_BASE_URL) == ("TOGETHER_API_KEY", "https://api.together.ai")


@pytest.mark.parametrize("package", PACKAGES[1:])
def test_each_name_is_exported_by_one_subpackage(package):
    """No re-export chains: besides the top-level facade, a name lives in one ``__all__``."""
    others = {n for p, names in exports().items() if p not in (package, PACKAGES[0]) for n in names}
    shared = set(exports()[package]) & others
    assert not shared, f"{package} re-exports {sorted(shared)}"


if __name__ == "__main__":
    json.dump(exports(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
