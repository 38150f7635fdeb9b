#!/usr/bin/env bash
# The same world in the Dagster UI: the simulator (with the demo sweep) beside `dagster dev`.
# Open http://127.0.0.1:${DAGSTER_PORT:-3000}; Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
uv sync --frozen --compile-bytecode --quiet
export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.demo/ui_home}"
mkdir -p "$DAGSTER_HOME"
uv run --frozen python -c "from pathlib import Path; from rl_sessions_dagster.testing.daemon import prepare_dagster_home; prepare_dagster_home(Path('$DAGSTER_HOME'), clean=False)"
SIM_PORT="${SIM_PORT:-0}"
log="$DAGSTER_HOME/simulator.log"
# The simulator runs the demo sweep on a loop so there is always something happening.
uv run --frozen python -m rl_sessions_dagster.testing.cli serve --port "$SIM_PORT" \
  --api-key sim-demo-key --scenario demo >"$log" 2>&1 &
sim_pid=$!
trap 'kill "$sim_pid" 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 100); do
  url=$(sed -n 's/^RL simulator listening on //p' "$log" | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "${url:-}" ] || { echo "the simulator did not start; see $log" >&2; exit 1; }
echo "simulator on $url (log: $log)"
export TOGETHER_API_KEY=sim-demo-key TOGETHER_BASE_URL="$url" RL_SENSOR_INTERVAL_SECONDS=5
uv run --frozen dagster dev -m example_repo.component_defs -h 127.0.0.1 -p "${DAGSTER_PORT:-3000}"
