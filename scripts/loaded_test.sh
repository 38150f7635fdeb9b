#!/usr/bin/env bash
# The test command under CPU load: N busy processes (default 2, one per core of the CI machine)
# spin beside `bash scripts/test.sh`, to show the tests wait on events, not on time windows.
#
#   bash scripts/loaded_test.sh [--burners N] [--runs K] [-- PYTEST ARGS...]
#
# --runs K repeats the test command K times and stops at the first failure. Prints the wall
# time and exit code of every run; exits with the first failing run's code (0 if all passed).
# The burners run in their own process group and are killed by that group id on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."

burners=2
runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --burners) burners="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (pytest arguments go after --)" >&2; exit 2 ;;
  esac
done
case "$burners$runs" in *[!0-9]*) echo "--burners and --runs take whole numbers" >&2; exit 2 ;; esac

burner_pgid=""
stop_burners() {
  if [ -n "$burner_pgid" ]; then
    kill -KILL -- "-$burner_pgid" 2>/dev/null || true
    wait "$burner_pgid" 2>/dev/null || true
    burner_pgid=""
  fi
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT
trap 'stop_burners; exit 143' TERM

if [ "$burners" -gt 0 ]; then
  # setsid: a new session and process group whose id is the leader's pid. The leader is a
  # shell that starts the burners and waits, so killing the group stops them all.
  setsid bash -c '
    for _ in $(seq "$1"); do python3 -c "while True: pass" & done
    wait
  ' burners "$burners" &
  burner_pgid=$!
  echo "loaded_test: $burners CPU burner(s) in process group $burner_pgid" >&2
fi

rc=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  set +e
  bash scripts/test.sh "$@"
  rc=$?
  set -e
  echo "loaded_test: run $i/$runs with $burners burner(s): exit $rc in $(( $(date +%s) - start )) s" >&2
  if [ "$rc" -ne 0 ]; then break; fi
done
stop_burners
exit "$rc"
