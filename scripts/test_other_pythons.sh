#!/usr/bin/env bash
# The fast test set (-m "not slow") on every supported Python besides the main one (3.11, on
# which scripts/test.sh runs everything, with this script beside it). Each version gets its own
# venv, .venv-py3XX (next to .venv, gitignored), installed from uv.lock like the main one; every
# venv is installed before the first test runs, then the versions are tested one after the
# other, each on $RL_OTHER_WORKERS pytest-xdist workers (default 2).
#
#   bash scripts/test_other_pythons.sh                  # 3.12 and 3.13
#   bash scripts/test_other_pythons.sh 3.13 -- -x tests/core   # one version, other pytest args
#
# A missing interpreter is a failure, never a skip: the package declares these versions.
# scripts/find_python.sh says where one is looked for ($RL_PYTHON_312 etc. to point at one).
set -euo pipefail
cd "$(dirname "$0")/.."

versions=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do versions+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#versions[@]} -eq 0 ] && versions=(3.12 3.13)
pytest_args=("$@")
[ ${#pytest_args[@]} -eq 0 ] && pytest_args=(-m "not slow" -q -n "${RL_OTHER_WORKERS:-2}")

status=0
pythons=()
for v in "${versions[@]}"; do
  if ! python=$(bash scripts/find_python.sh "$v"); then
    echo "Python $v is supported by the package: its tests cannot be skipped" >&2
    status=1
    continue
  fi
  start=$SECONDS
  UV_PROJECT_ENVIRONMENT=".venv-py${v//./}" uv sync --frozen --compile-bytecode --quiet \
    --python "$python"
  echo "== Python $v ($python): uv sync into .venv-py${v//./}: $((SECONDS - start)) s"
  pythons+=("$v=$python")
done
for entry in "${pythons[@]}"; do
  v=${entry%%=*} python=${entry#*=}
  echo "== Python $v: pytest ${pytest_args[*]}"
  start=$SECONDS
  set +e
  UV_PROJECT_ENVIRONMENT=".venv-py${v//./}" uv run --frozen --python "$python" pytest \
    "${pytest_args[@]}"
  rc=$?
  set -e
  # pytest's 5 means no test was collected: a failure here, as in scripts/test.sh.
  if [ "$rc" -ne 0 ]; then
    echo "Python $v: pytest exited $rc" >&2
    status=1
  fi
  echo "== Python $v: $((SECONDS - start)) s"
done
exit "$status"
