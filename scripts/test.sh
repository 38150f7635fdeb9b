#!/usr/bin/env bash
# The project's test command (README, CI): install from uv.lock, lint, type-check, test on
# Python 3.11 (everything), 3.12 and 3.13 (the fast set), then check the built wheel.
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
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; rc=1; fi
# The whole check (no pytest arguments, as in CI): the other supported Pythons (3.12, 3.13:
# the fast set, each in its own venv from uv.lock; a missing interpreter fails) and the built
# wheel installed alone (every module imported, deploy/workspace.yaml loaded with it).
if [ $# -eq 0 ] || [ "${RL_FULL_CHECK:-}" = "1" ]; then
  bash scripts/test_other_pythons.sh || rc=1
  bash scripts/check_wheel.sh || rc=1
fi
exit "$rc"
