"""What a definitions file imports stays light: no SQLAlchemy, httpx or rich until used.

A guard on *which* modules load, in fresh interpreters, not on timings: the import time
itself is measured by ``benchmarks/startup.py`` (BENCHMARKS.md, "Import and load").
SQLAlchemy loads with a SQL session store, httpx (and rich, which httpx imports) with the
first client; a code server that never syncs to a database pays for neither at load.
"""

import importlib
import importlib.resources

import pytest

from tests.support import modules_after

HEAVY = ("sqlalchemy", "httpx", "rich")
DEFINITIONS = (
    "from rl_sessions_dagster import TogetherRLResource, TogetherRLComponent, "
    "build_checkpoint_sensor, build_session_status_sensor, build_rl_event_sensor, "
    "build_model_resource_sensor, build_idle_guard, build_spend_asset, "
    "build_checkpoint_asset_spec"
)


#: What a tick or a run needs, never a definitions file: it loads with the first tick or run.
RUN_TIME = {
    *(f"api.{m}" for m in ("models", "pages", "registration", "lifecycle", "chat")),
    *(f"core.{m}" for m in ("cursor", "state", "tracker", "tracker_io", "poll", "spend")),
    "core.resource_tracker",
    *(f"sensors.{m}" for m in ("session_tick", "resource_tick", "spend_spans")),
    *("evaluation.runner", "storage.rows", "assets.spend_report"),
}


def loaded_after(code: str) -> set[str]:
    """Top-level packages loaded after ``code`` in a fresh interpreter."""
    return {name.split(".")[0] for name in modules_after(code)}


@pytest.mark.parametrize(
    "code",
    [
        DEFINITIONS,
        "import rl_sessions_dagster.sensors",
        "import rl_sessions_dagster.components",
        "import rl_sessions_dagster.assets",
        "import rl_sessions_dagster.storage",
        "import rl_sessions_dagster.api",
    ],
)
def test_loading_definitions_imports_no_heavy_dependency(code: str) -> None:
    heavy = loaded_after(code).intersection(HEAVY)
    assert not heavy, f"{code!r} imports {sorted(heavy)}"


def test_the_heavy_dependencies_load_where_used() -> None:
    client = "from rl_sessions_dagster.api import RLSessionsClient; RLSessionsClient('k')"
    assert "httpx" in loaded_after(client)
    store = (
        "from rl_sessions_dagster.storage import SQLAlchemyTableStore\n"
        "SQLAlchemyTableStore('sqlite:///:memory:')"
    )
    assert "sqlalchemy" in loaded_after(store)


@pytest.mark.parametrize(
    ("code", "not_loaded"),
    [
        # The resource needs the retry policy and the table URL check, not the API's models,
        # the tracker's state or the table rows (what every eager ``__init__`` used to load).
        (
            "from rl_sessions_dagster import TogetherRLResource",
            {"api.models", "api.operation_results", "core.state", "storage.rows", "sensors"},
        ),
        ("from rl_sessions_dagster.api import TogetherRLError", {"api.models", "api.retries"}),
        # A definitions file loads what definitions need; what a tick or a run needs (the
        # tracker, its state, the API's models, the evaluation engine, the table rows) loads
        # with the first tick or run, not in every code server at startup.
        (DEFINITIONS, RUN_TIME),
        ("from rl_sessions_dagster.core import SessionEvent", {"core.state", "core.tracker"}),
    ],
)
def test_a_name_loads_only_its_module(code: str, not_loaded: set[str]) -> None:
    loaded = {name for name in modules_after(code) if name.startswith("rl_sessions_dagster")}
    assert not {f"rl_sessions_dagster.{m}" for m in not_loaded} & loaded, sorted(loaded)


@pytest.mark.parametrize(
    "package",
    ["api", "assets", "core", "evaluation", "partitions", "resource", "sensors", "storage",
     "training"],
)  # fmt: skip
def test_lazy_exports_resolve(package: str) -> None:
    module = importlib.import_module(f"rl_sessions_dagster.{package}")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018
    for submodule in importlib.resources.files(module).iterdir():
        if submodule.name.endswith(".py") and not submodule.name.startswith("_"):
            # as when every __init__ imported its modules: a submodule is an attribute
            assert getattr(module, submodule.name[:-3]).__name__.endswith(submodule.name[:-3])
    star: dict[str, object] = {}
    exec(f"from rl_sessions_dagster.{package} import *", star)
    assert set(module.__all__) <= set(star)
