"""Run the real ``dagster-daemon`` against a definitions module, for tests and the demo.

Stdlib + Dagster only. The daemon runs in its own process group, so stopping it also stops the
code server it spawned; nothing is left behind even if the caller fails.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
"""


def prepare_dagster_home(home: Path, *, clean: bool = True) -> Path:
    """A DAGSTER_HOME with SQLite storage, telemetry off and runs launched immediately."""
    if clean and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    return home


def write_workspace(home: Path, module: str, working_directory: Path) -> Path:
    path = home / "workspace.yaml"
    path.write_text(
        "load_from:\n"
        f"  - python_module:\n      module_name: {module}\n"
        f"      working_directory: {working_directory}\n"
    )
    return path


def _daemon_executable() -> list[str]:
    exe = Path(sys.executable).with_name("dagster-daemon")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("dagster-daemon")
    if found:
        return [found]
    return [sys.executable, "-m", "dagster._daemon"]


@contextmanager
def dagster_daemon(
    home: Path,
    module: str,
    *,
    working_directory: Path,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``dagster-daemon run`` for ``module``; stop it (and its children) on exit."""
    workspace = write_workspace(home, module, working_directory)
    full_env = {**os.environ, "DAGSTER_HOME": str(home), **(env or {})}
    log = open(log_path or home / "daemon.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [*_daemon_executable(), "run", "-w", str(workspace)],
        env=full_env,
        cwd=str(working_directory),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        stop_process_group(proc)
        log.close()


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM the process group we created, then SIGKILL what is left after ``timeout``."""
    if proc.poll() is not None:
        _kill_group(proc.pid, signal.SIGKILL)  # children may outlive a dead leader
        return
    _kill_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    """True while any process of the group is alive (used to prove nothing is left behind)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
