"""The layering rules, checked in fresh interpreters: imports point down, never up."""

from pathlib import Path

import pytest

import rl_sessions_dagster
from tests.support import modules_after

#: Load a subpackage without the top-level facade (which imports every layer, Dagster included,
#: on purpose): what is then loaded is what the subpackage itself imports.
WITHOUT_FACADE = (
    "import importlib.util, sys, types\n"
    "pkg = types.ModuleType('rl_sessions_dagster')\n"
    "pkg.__path__ = list(importlib.util.find_spec('rl_sessions_dagster').submodule_search_locations)\n"
    "sys.modules['rl_sessions_dagster'] = pkg\n"
)


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("rl_sessions_dagster.api", {"dagster", "rl_sessions_dagster.core"}),
        ("rl_sessions_dagster.core", {"dagster", "rl_sessions_dagster.resource"}),
        ("rl_sessions_dagster.evaluation", {"dagster", "rl_sessions_dagster.core"}),
        ("rl_sessions_dagster.testing", {"dagster", "rl_sessions_dagster.api"}),
        (
            "rl_sessions_dagster.training",
            {"rl_sessions_dagster.sensors", "rl_sessions_dagster.assets"},
        ),
        (
            "rl_sessions_dagster.resource",
            {"rl_sessions_dagster.sensors", "rl_sessions_dagster.assets"},
        ),
        ("rl_sessions_dagster.sensors", {"rl_sessions_dagster.assets"}),
        (
            "rl_sessions_dagster.partitions",
            {"rl_sessions_dagster.sensors", "rl_sessions_dagster.assets"},
        ),
    ],
)
def test_layer_does_not_import_upwards(module, forbidden):
    loaded = modules_after(f"{WITHOUT_FACADE}import {module}")
    assert not (forbidden & loaded), f"{module} pulls in {sorted(forbidden & loaded)}"


def test_core_source_does_no_io():
    """The core imports API models (plain pydantic) but never an HTTP or Dagster module."""
    core = Path(rl_sessions_dagster.__file__).parent / "core"
    for path in core.glob("*.py"):
        text = path.read_text()
        for word in (
            "import httpx",
            "import dagster",
            "from dagster",
            "from ..api.client",
            "import socket",
            "import requests",
        ):
            assert word not in text, f"{path.name} has '{word}'"


def test_top_level_exports_resolve():
    assert "__version__" in rl_sessions_dagster.__all__
    for name in rl_sessions_dagster.__all__:
        assert getattr(rl_sessions_dagster, name) is not None


# Static rules, read from the source (function-level imports count too).

PACKAGE = Path(rl_sessions_dagster.__file__).parent


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) for every import in ``path``."""
    import ast

    here = ["rl_sessions_dagster", *path.relative_to(PACKAGE).with_suffix("").parts]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((module, [alias.name for alias in node.names]))
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "rl_sessions_dagster" and len(parts) > 1 else None


def _modules(layer: str) -> list[Path]:
    root = PACKAGE / layer
    return sorted(root.rglob("*.py")) if root.is_dir() else [PACKAGE / f"{layer}.py"]


@pytest.mark.parametrize(
    ("layer", "other"), [("sensors", "assets"), ("partitions", "sensors"), ("partitions", "assets")]
)
def test_layer_never_imports_the_other(layer, other):
    bad = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in _modules(layer)
        for module, _ in _imports(path)
        if _layer(module) == other
    ]
    assert bad == []


def test_assets_never_import_sensors():
    bad = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in _modules("assets")
        for module, _ in _imports(path)
        if _layer(module) == "sensors"
    ]
    assert bad == []


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports_across_packages() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer(".".join(["rl_sessions_dagster", *path.relative_to(PACKAGE).parts]))
        for module, names in _imports(path):
            layer = _layer(module)
            if layer is None or layer == own:
                continue
            private = [p for p in module.split(".")[1:] if _is_private(p)]
            private += [n for n in names if _is_private(n)]
            if private:
                bad.append(f"{path.relative_to(PACKAGE)} imports {module}: {private}")
    return bad


def test_nothing_imports_a_private_name_across_packages():
    assert _private_imports_across_packages() == []


def _dagster_free(path: Path) -> bool:
    return not any(m == "dagster" or m.startswith("dagster.") for m, _ in _imports(path))


def test_new_glue_modules_import_dagster():
    """Modules of the Dagster layers are Dagster glue; Dagster-free code belongs in api/core."""
    for layer in ("components", "partitions"):
        for path in _modules(layer):
            if path.name != "__init__.py":
                assert not _dagster_free(path), f"{path.relative_to(PACKAGE)} is Dagster-free"


def test_dagster_layers_hold_no_dagster_free_helpers():
    free = [
        str(path.relative_to(PACKAGE))
        for layer in ("assets", "sensors")
        for path in _modules(layer)
        if path.name != "__init__.py" and _dagster_free(path)
    ]
    assert free == []


#: Each package and the packages of ours it may import: the layer map, one floor at a time.
#: ``api`` → ``core``, ``evaluation``, ``storage`` (no Dagster) → ``resource``, ``partitions``
#: (glue both families share) → ``training``, ``sensors``, ``assets`` → ``components``.
#: ``testing`` (the simulator) is an oracle independent of the client: it imports none of them.
#: ``version`` imports nothing of ours: every package may use it.
BASE = {"version"}
ALLOWED = {
    "api": BASE,
    "core": {"api", *BASE},
    "evaluation": {"api", *BASE},
    "storage": {"api", "core", *BASE},
    "resource": {"api", "core", "storage", *BASE},
    "partitions": {"api", "core", *BASE},
    "training": {"api", "resource", *BASE},
    "sensors": {"api", "core", "storage", "resource", "partitions", *BASE},
    "assets": {"api", "core", "evaluation", "storage", "resource", "partitions", *BASE},
    "components": {
        "api",
        "core",
        "evaluation",
        "resource",
        "partitions",
        "sensors",
        "assets",
        *BASE,
    },
    "testing": BASE,
}


def test_every_package_imports_only_the_floors_below_it():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(ALLOWED), "a new package needs its place in the layer map"
    bad = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for package in sorted(packages)
        for path in _modules(package)
        for module, _ in _imports(path)
        if _layer(module) not in (None, package, *ALLOWED[package])
    ]
    assert bad == []
