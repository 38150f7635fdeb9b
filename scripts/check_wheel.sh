#!/usr/bin/env bash
# The package as a user installs it: build the wheel, install it alone into a fresh venv (its
# dependencies resolved from PyPI by the declared ranges, not from uv.lock), then
#   1. check its metadata (version, Python range, license file) and that no test helper ships,
#   2. import every module of the package in that venv (a dependency that the code imports but
#      the wheel does not declare fails here),
#   3. load deploy/workspace.yaml with that venv's `dagster` CLI from the repository root, as
#      the README says (no editable install puts the repository on sys.path there).
# Run by scripts/test.sh; alone: bash scripts/check_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

uv build --wheel --out-dir "$tmp/dist" --quiet
wheel=$(ls "$tmp"/dist/*.whl)
echo "== wheel: $(basename "$wheel")"
# The oldest supported Python: what requires-python promises must hold there.
UV_PYTHON_DOWNLOADS=never uv venv --quiet --python "$(bash scripts/find_python.sh 3.11)" "$tmp/venv"
uv pip install --quiet --python "$tmp/venv/bin/python" "$wheel"

# From a directory outside the repository: only the installed wheel can be imported.
(cd "$tmp" && "$tmp/venv/bin/python" - "$wheel" <<'EOF'
import importlib
import importlib.metadata as md
import pkgutil
import sys
import traceback
import zipfile
from pathlib import Path

wheel = Path(sys.argv[1])
problems = []

names = zipfile.ZipFile(wheel).namelist()
for forbidden in ("rl_sessions_dagster/testing/postgres.py", "tests/", "benchmarks/"):
    if any(n.startswith(forbidden) for n in names):
        problems.append(f"the wheel ships {forbidden}")
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
    problems.append("the wheel has no LICENSE file")

meta = md.metadata("rl-sessions-dagster")
import rl_sessions_dagster as pkg

if meta["Version"] != pkg.__version__:
    problems.append(f"metadata version {meta['Version']} != __version__ {pkg.__version__}")
if meta["Requires-Python"] != ">=3.11":
    problems.append(f"Requires-Python is {meta['Requires-Python']}")
site = Path(pkg.__file__).resolve().parent
if "site-packages" not in site.parts:
    problems.append(f"imported from {site}, not from the installed wheel")

modules = [pkg.__name__]
# Every module but ``__main__`` ones (importing one runs its command line).
modules += [
    m.name
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
    if not m.name.endswith(".__main__")
]
for name in modules:
    try:
        importlib.import_module(name)
    except BaseException:
        problems.append(f"import {name} failed:\n{traceback.format_exc()}")

deps = {r.split(";")[0] for r in md.requires("rl-sessions-dagster") or [] if "extra ==" not in r}
print(f"{len(modules)} modules imported with Python {sys.version.split()[0]}; "
      f"dagster {md.version('dagster')}, declared: {', '.join(sorted(deps))}")
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
EOF
)

mkdir -p "$tmp/home"
set +e
(cd "$root" && env -u PYTHONPATH DAGSTER_HOME="$tmp/home" \
  "$tmp/venv/bin/dagster" definitions validate -w deploy/workspace.yaml >"$tmp/validate.log" 2>&1)
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$tmp/validate.log" >&2
  echo "dagster definitions validate -w deploy/workspace.yaml failed with the installed wheel" >&2
  exit 1
fi
grep -o "Validation successful for code location [a-z_]*" "$tmp/validate.log"
echo "== wheel check: $((SECONDS - start)) s"
