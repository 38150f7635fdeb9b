#!/usr/bin/env bash
# The project's test command (README, CI): install from uv.lock, lint, type-check, then side by
# side: the whole suite on Python 3.11 on parallel workers, the fast set on 3.12 and 3.13, and
# the built wheel's check. Any failing step fails the run; its last line is the 3.11 summary.
#
#   bash scripts/test.sh            # everything (what CI runs)
#   bash scripts/test.sh ARGS       # ruff, mypy, then pytest ARGS on 3.11 only (RL_FULL_CHECK=1:
#                                   # the other Pythons and the wheel as well)
#
# RL_TEST_WORKERS (default 4) is the 3.11 suite's pytest-xdist worker count when no ARGS are
# given; RL_OTHER_WORKERS (default 2) that of each other Python. Most slow tests wait on real
# processes (the daemon's 5 s loop, dg, the demo), so more workers than cores pay off.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
started=$SECONDS
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

full=0
if [ $# -eq 0 ] || [ "${RL_FULL_CHECK:-}" = "1" ]; then full=1; fi

# The other checks run in the background, each in its own process group (killed on any early
# exit) writing to its own log, printed once the 3.11 suite is done.
logs=$(mktemp -d)
groups=()
cleanup() {
  for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
background() {  # NAME COMMAND...: run COMMAND in a new process group, its rc in $logs/NAME.rc
  local name=$1
  shift
  setsid bash -c 's=$SECONDS; "$@"; rc=$?; echo "$rc $((SECONDS - s))" > "$0.rc"' \
    "$logs/$name" "$@" >"$logs/$name.log" 2>&1 </dev/null &
  groups+=("$!")
}
if [ "$full" -eq 1 ]; then
  # 3.12 and 3.13 one after the other (their venvs first), and the wheel.
  background other bash scripts/test_other_pythons.sh
  background wheel bash scripts/check_wheel.sh
fi

lint_started=$SECONDS
uv run --frozen ruff check .
uv run --frozen ruff format --check .
uv run --frozen mypy
lint_seconds=$((SECONDS - lint_started))

pytest_args=("$@")
if [ $# -eq 0 ]; then
  # One test at a time per worker, longest first (tests/conftest.py sorts them).
  pytest_args=(-n "${RL_TEST_WORKERS:-4}" --maxschedchunk 1 --durations 15)
fi
echo "== Python 3.11: pytest ${pytest_args[*]}"
suite_started=$SECONDS
set +e
uv run --frozen pytest "${pytest_args[@]}" 2>&1 | tee "$logs/main.log"
rc=${PIPESTATUS[0]}
set -e
suite_seconds=$((SECONDS - suite_started))
# pytest's exit code 5 means "no tests collected": that is a failure for us, not a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; rc=1; fi
summary=$(grep -E ' in [0-9.]+s( \([0-9:]+\))?( =+)?$' "$logs/main.log" | tail -n 1 || true)

report=("ruff + mypy: passed (${lint_seconds} s)"
        "Python 3.11, pytest ${pytest_args[*]}: exit ${rc} (${suite_seconds} s)")
if [ "$full" -eq 1 ]; then
  for step in "other:Python 3.12 and 3.13, the fast set (scripts/test_other_pythons.sh)" \
              "wheel:the built wheel (scripts/check_wheel.sh)"; do
    name=${step%%:*} label=${step#*:}
    wait "${groups[0]}" 2>/dev/null || true
    groups=("${groups[@]:1}")
    printf '\n== %s, run beside the 3.11 suite:\n' "$label"
    cat "$logs/$name.log"
    step_rc=1 step_seconds="?"
    [ -f "$logs/$name.rc" ] && read -r step_rc step_seconds <"$logs/$name.rc"
    [ "$step_rc" = 0 ] || rc=1
    report+=("${label}: exit ${step_rc} (${step_seconds} s)")
  done
fi
echo
echo "== summary ($((SECONDS - started)) s in all)"
printf '  %s\n' "${report[@]}"
# CI reads the closing line: the 3.11 suite's own summary.
echo "${summary:-Python 3.11: pytest printed no summary (exit ${rc})}"
exit "$rc"
