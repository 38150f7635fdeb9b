#!/usr/bin/env bash
# The project's test command (README, CI): install from uv.lock, lint, type-check, test.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
uv sync --frozen --compile-bytecode --quiet
# Tests on a real PostgreSQL start a throwaway server from the installed binaries. CI (CI=true)
# installs Debian's package when they are missing, and fails those tests rather than skip them.
if [ "${CI:-}" = "true" ]; then export RL_REQUIRE_POSTGRES="${RL_REQUIRE_POSTGRES:-1}"; fi
if [ "${CI:-}" = "true" ] || [ "${RL_INSTALL_POSTGRES:-}" = "1" ]; then
  if [ -z "${RL_PG_BIN:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    && ! command -v initdb >/dev/null 2>&1; then
    echo "PostgreSQL server binaries missing: apt-get install postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null \
      || echo "could not install PostgreSQL; its tests will fail" >&2
  fi
fi
uv run --frozen ruff check .
uv run --frozen mypy
set +e
uv run --frozen pytest "$@"
rc=$?
set -e
# pytest's exit code 5 means "no tests collected": that is a failure for us, not a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
