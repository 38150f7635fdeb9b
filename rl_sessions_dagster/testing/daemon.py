"""Run the real ``dagster-daemon`` on a definitions module, in its own process group, so
stopping it also stops the code server it spawned, even if the caller fails."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from dagster import DagsterInstance

DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
"""


def prepare_dagster_home(
    home: Path, *, clean: bool = True, storage: Mapping[str, Any] | None = None
) -> Path:
    """A DAGSTER_HOME with telemetry off and runs launched immediately; ``storage`` is the
    ``storage:`` section of ``dagster.yaml`` (None: Dagster's default, SQLite in ``home``)."""
    if clean and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    # JSON is YAML (flow style): no YAML writer needed.
    extra = "" if storage is None else f"storage: {json.dumps(dict(storage))}\n"
    (home / "dagster.yaml").write_text(DAGSTER_YAML + extra)
    # Create the storage now: a daemon and a reader opening a fresh home at the same moment
    # can both stamp the schema version, and code loading then fails ("more than one head").
    DagsterInstance.from_config(str(home)).dispose()
    return home


@contextmanager
def dagster_daemon(
    home: Path, module: str, *, working_directory: Path, env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    """Start ``dagster-daemon run`` for ``module``; stop it (and its children) on exit."""
    workspace = home / "workspace.yaml"
    workspace.write_text(f"load_from:\n  - python_module:\n      module_name: {module}\n"
                         f"      working_directory: {working_directory}\n")  # fmt: skip
    exe = Path(sys.executable).with_name("dagster-daemon")
    found = str(exe) if exe.exists() else shutil.which("dagster-daemon")
    daemon = [found] if found else [sys.executable, "-m", "dagster._daemon"]
    with open(log_path or home / "daemon.log", "wb") as log:
        full_env = {**os.environ, "DAGSTER_HOME": str(home), **(env or {})}
        proc = subprocess.Popen(
            [*daemon, "run", "-w", str(workspace)], env=full_env, cwd=str(working_directory),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            yield proc
        finally:
            stop_process_group(proc)


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM the process group we created, then SIGKILL what is left after ``timeout``."""
    if proc.poll() is None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    # SIGKILL is delivered asynchronously: wait until every member is really gone (returns as
    # soon as it is; the ceiling is for a loaded machine, where reaping can lag by seconds).
    gone_by = time.monotonic() + 60
    while group_alive(proc.pid) and time.monotonic() < gone_by:
        time.sleep(0.05)


def group_alive(pgid: int) -> bool:
    """True while a live process of the group exists. Reads ``/proc`` where it exists, as
    ``killpg(pgid, 0)`` also counts zombies, which may linger until reaped."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for entry in Path("/proc").iterdir():
        with suppress(OSError, ValueError):
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
            fields = stat[stat.rfind(")") + 2 :].split()  # after the command: state, ppid, pgrp
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


#: The statuses of a tick that has finished well (``TickStatus`` names).
FINISHED_TICKS = ("SUCCESS", "SKIPPED")


def sensor_ticks(
    instance: Any, sensor_name: str, statuses: Iterable[Any] | None = FINISHED_TICKS
) -> list[Any]:
    """Stored ticks of a sensor, newest first: finished ones by default (a tick is stored
    STARTED before the sensor runs), ``statuses=None`` for all, or those ``TickStatus`` given."""
    wanted = None if statuses is None else {getattr(s, "value", s) for s in statuses}
    for state in instance.all_instigator_state():
        if state.instigator_type.value == "SENSOR" and state.instigator_name == sensor_name:
            ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=10_000)
            return [t for t in ticks if wanted is None or t.status.value in wanted]
    return []


def wait_for(
    predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.25
) -> Any:
    """``predicate()`` once truthy; TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
