#!/usr/bin/env bash
# The project's test command (README, CI): install from uv.lock, lint, type-check, test.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
uv sync --frozen --compile-bytecode --quiet
uv run --frozen ruff check .
uv run --frozen mypy
set +e
uv run --frozen pytest "$@"
rc=$?
set -e
# pytest's exit code 5 means "no tests collected": that is a failure for us, not a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
