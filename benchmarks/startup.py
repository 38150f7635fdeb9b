"""Row 5: import time (fresh interpreters) and API calls made while loading the example
definitions (the simulator counts every request it serves)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rl_sessions_dagster.testing import RLSimulator

ROOT = Path(__file__).resolve().parents[1]

_IMPORT = "import time; t = time.perf_counter(); {m}; print(time.perf_counter() - t)"
#: What a definitions file imports: the resource, every builder and the Component.
_DEFS_NAMES = (
    "TogetherRLResource",
    "TogetherRLComponent",
    "build_checkpoint_sensor",
    "build_session_status_sensor",
    "build_rl_event_sensor",
    "build_model_resource_sensor",
    "build_idle_guard",
    "build_spend_asset",
)
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


def run_startup(repeats: int) -> dict[str, Any]:
    """Fresh interpreters, interleaved (the order flips every round); medians."""
    ours: list[float] = []
    base: list[float] = []
    full: list[float] = []
    resource: list[float] = []
    for i in range(repeats):
        cases = [
            (ours, "import rl_sessions_dagster"),
            (base, "import dagster"),
            (full, f"import dagster; from rl_sessions_dagster import {', '.join(_DEFS_NAMES)}"),
            (resource, "import dagster; from rl_sessions_dagster import TogetherRLResource"),
        ]
        for out, statement in cases if i % 2 == 0 else cases[::-1]:
            out.append(_python(_IMPORT.format(m=statement)))
    result: dict[str, Any] = {
        "repeats": repeats,
        "import_ours_s": statistics.median(ours),
        "import_dagster_s": statistics.median(base),
        "import_for_defs_s": statistics.median(full),
        "import_resource_s": statistics.median(resource),
        "bytecode_writes_disabled": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
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
