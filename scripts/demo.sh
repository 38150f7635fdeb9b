#!/usr/bin/env bash
# The demo: install from uv.lock, then run the simulated sweep with the real dagster-daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
uv sync --frozen --compile-bytecode --quiet
exec uv run --frozen python -m example_repo.demo "$@"
