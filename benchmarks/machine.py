"""The machine and versions the numbers were taken on."""

from __future__ import annotations

import os
import platform
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe(sdk_version: str | None = None) -> dict[str, str]:
    return {
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "RAM": f"{_ram_gib():.1f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "rl-sessions-dagster": _version("rl-sessions-dagster"),
        "dagster": _version("dagster"),
        "httpx": _version("httpx"),
        "pydantic / pydantic-core": f"{_version('pydantic')} / {_version('pydantic-core')}",
        "together SDK": sdk_version or "not measured",
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "unset"),
    }
