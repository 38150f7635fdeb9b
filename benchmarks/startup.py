"""Row 5: import time (fresh interpreters) and API calls made while loading the example
definitions (the simulator counts every request it serves)."""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rl_sessions_dagster.testing import RLSimulator

ROOT = Path(__file__).resolve().parents[1]

_IMPORT = "import time; t = time.perf_counter(); {m}; print(time.perf_counter() - t)"
#: What a definitions file imports: the resource, every builder and the Component.
_DEFS_NAMES = (
    "TogetherRLResource",
    "TogetherRLComponent",
    "build_session_sensor",
    "build_model_resource_sensor",
    "build_idle_guard",
    "build_spend_asset",
)
#: A definitions file that times our import where a code server does it: inside Dagster's own
#: loader (``dagster definitions validate -f``), after everything Dagster imports and allocates
#: to load a code location. It also counts the full collections that ran during our import.
_PROBE = (
    "import gc, sys, time\n"
    "full = gc.get_stats()[2]['collections']\n"
    "t = time.perf_counter()\n"
    "from rl_sessions_dagster import {names}\n"
    "took = time.perf_counter() - t\n"
    "print('rl-import', took, gc.get_stats()[2]['collections'] - full, file=sys.stderr)\n"
    "import dagster as dg\n"
    "defs = dg.Definitions()\n"
)
_RESOURCE_ONLY = "from rl_sessions_dagster import TogetherRLResource"
_LOAD = (
    "import time; t = time.perf_counter()\n"
    "import dagster as dg\n"
    "import example_repo.definitions as m\n"
    "dg.Definitions.validate_loadable(m.defs)\n"
    "print(time.perf_counter() - t)\n"
)


def _python(code: str, env: dict[str, str] | None = None) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env=env,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"subprocess failed: {proc.stderr[-800:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def _in_loader(probe: Path, env: dict[str, str]) -> tuple[float, int]:
    """Seconds our import took inside ``dagster definitions validate``, and the full
    collections that ran meanwhile."""
    dagster_cli = Path(sys.executable).with_name("dagster")
    proc = subprocess.run(
        [str(dagster_cli), "definitions", "validate", "-f", str(probe)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env=env,
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.startswith("rl-import ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"dagster definitions validate failed: {proc.stderr[-800:]}")
    _, seconds, collections = lines[-1].split()
    return float(seconds), int(collections)


def run_startup(repeats: int) -> dict[str, Any]:
    """Fresh interpreters, interleaved (the order flips every round); medians.

    What our import costs a process that imported dagster is timed inside that process, after
    ``import dagster`` (subtracting two whole-process medians would leave the noise of two
    dagster imports, ±100 ms here). ``import dagster`` also leaves a full collection of its
    heap owed: the first few thousand objects anything allocates next pay it. The ``settled``
    case pays it first (``gc.collect()``), so it shows what our import itself costs. The
    ``loader`` case times the same import where a code server does it, inside Dagster's own
    loader, and counts the full collections during it (whether the debt is still owed there)."""
    # An installed wheel has its bytecode (uv --compile-bytecode); so does the checkout here.
    compileall.compile_dir(ROOT / "rl_sessions_dagster", quiet=1)
    names = ", ".join(_DEFS_NAMES)
    after = "import dagster, gc, time{settle}; t = time.perf_counter(); {m}; print(time.perf_counter() - t)"
    ours: list[float] = []
    base: list[float] = []
    full: list[float] = []
    resource: list[float] = []
    owed: list[float] = []
    settled: list[float] = []
    loader: list[float] = []
    collections: list[int] = []
    with tempfile.TemporaryDirectory(prefix="rl-startup-") as work:
        probe = Path(work) / "probe_definitions.py"
        probe.write_text(_PROBE.format(names=names))
        loader_env = {**os.environ, "DAGSTER_HOME": work}

        def in_loader() -> float:
            seconds, full_collections = _in_loader(probe, loader_env)
            collections.append(full_collections)
            return seconds

        defs = f"from rl_sessions_dagster import {names}"
        cases: list[tuple[list[float], Callable[[], float]]] = [
            (ours, partial(_python, _IMPORT.format(m="import rl_sessions_dagster"))),
            (base, partial(_python, _IMPORT.format(m="import dagster"))),
            (full, partial(_python, after.format(settle="", m=defs))),
            (resource, partial(_python, after.format(settle="", m=_RESOURCE_ONLY))),
            (owed, partial(_python, after.format(settle="", m="gc.collect()"))),
            (settled, partial(_python, after.format(settle="; gc.collect()", m=defs))),
            (loader, in_loader),
        ]
        for i in range(repeats):
            for out, run in cases if i % 2 == 0 else cases[::-1]:
                out.append(run())
    result: dict[str, Any] = {
        "repeats": repeats,
        "import_ours_s": statistics.median(ours),
        "import_dagster_s": statistics.median(base),
        "defs_over_dagster_s": statistics.median(full),
        "resource_over_dagster_s": statistics.median(resource),
        "owed_collection_s": statistics.median(owed),
        "defs_over_settled_s": statistics.median(settled),
        "defs_in_loader_s": statistics.median(loader),
        "loader_full_collections": max(collections),
    }
    with RLSimulator(api_key="sk-bench-load") as sim, tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "TOGETHER_API_KEY": "sk-bench-load",
            "TOGETHER_BASE_URL": sim.base_url,
            "DAGSTER_HOME": home,
        }
        result["load_defs_s"] = _python(_LOAD, env)
        result["load_api_calls"] = sim.requests.count()
    return result


if __name__ == "__main__":
    from .report import startup_section

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    print("\n".join(startup_section(run_startup(n))))
