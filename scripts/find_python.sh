#!/usr/bin/env bash
# Print the path of a working Python X.Y interpreter, or fail saying where it looked.
#   bash scripts/find_python.sh 3.12
# In order: $RL_PYTHON_3XX (e.g. RL_PYTHON_312=/path/to/python3.12), pyenv builds
# ($PYENV_ROOT/versions/3.12.*, newest patch first), python3.12 in /usr/local/bin and /usr/bin,
# then `uv python find` with downloads off. A candidate must start and report that version
# (a pyenv shim that points nowhere does not count).
set -euo pipefail
v="${1:?usage: find_python.sh X.Y}"
var="RL_PYTHON_${v//./}"
candidates=()
[ -n "${!var:-}" ] && candidates+=("${!var}")
while IFS= read -r candidate; do candidates+=("$candidate"); done < <(
  ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".*/bin/python 2>/dev/null | sort -rV
)
candidates+=("/usr/local/bin/python$v" "/usr/bin/python$v")
found=$(UV_PYTHON_DOWNLOADS=never uv python find --no-project "$v" 2>/dev/null || true)
[ -n "$found" ] && candidates+=("$found")
for candidate in "${candidates[@]}"; do
  if [ -x "$candidate" ] && "$candidate" -c \
    "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$v'.split('.'))))" 2>/dev/null
  then
    echo "$candidate"
    exit 0
  fi
done
echo "Python $v not found (looked at \$$var, ${PYENV_ROOT:-$HOME/.pyenv}/versions/$v.*," \
  "/usr/local/bin, /usr/bin, uv python find): install it or set $var to its path" >&2
exit 1
