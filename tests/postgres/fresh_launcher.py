"""A run launcher that starts every run the way Kubernetes does: a new process in a fresh,
empty working directory and ``DAGSTER_HOME`` (holding only ``dagster.yaml``, as the Helm
chart's config map does), deleted as soon as the run ends.

Tests only. Like ``K8sRunLauncher`` it runs ``dagster api execute_run`` with no instance ref
(the worker loads the instance from its ``DAGSTER_HOME``); a file any run leaves behind is gone
before the next one starts. Each launch is recorded in ``record_dir/launches.jsonl``
(run id, scratch directory, exit code) so the test can prove the directories were wiped.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.launcher import LaunchRunContext, RunLauncher
from dagster._grpc.types import ExecuteRunArgs
from dagster._serdes import ConfigurableClass, ConfigurableClassData


class FreshDirRunLauncher(RunLauncher, ConfigurableClass):
    def __init__(self, record_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._inst_data = inst_data
        self.record_dir = Path(record_dir)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"record_dir": dg.Field(dg.StringSource)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: dict[str, Any]
    ) -> "FreshDirRunLauncher":
        return cls(inst_data=inst_data, **config_value)

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        origin = context.job_code_origin
        assert origin is not None
        scratch = Path(tempfile.mkdtemp(prefix="rl-run-"))
        home, work, tmp = scratch / "dagster_home", scratch / "work", scratch / "tmp"
        for d in (home, work, tmp):
            d.mkdir()
        shutil.copy(Path(self._instance.root_directory) / "dagster.yaml", home / "dagster.yaml")
        args = ExecuteRunArgs(
            job_origin=origin, run_id=run.run_id, instance_ref=None, set_exit_code_on_failure=True
        ).get_command_args()
        env = {**os.environ, "DAGSTER_HOME": str(home), "HOME": str(scratch), "TMPDIR": str(tmp)}
        log = open(self.record_dir / f"run-{run.run_id}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            args, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        with self._lock:
            self._procs[run.run_id] = proc
        self._instance.report_engine_event(
            f"Started in a fresh directory (pid {proc.pid})", run, cls=type(self)
        )
        threading.Thread(target=self._reap, args=(run.run_id, proc, scratch), daemon=True).start()

    def _reap(self, run_id: str, proc: subprocess.Popen[bytes], scratch: Path) -> None:
        code = proc.wait()
        left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*"))
        shutil.rmtree(scratch, ignore_errors=True)
        record = {"run_id": run_id, "dir": str(scratch), "exit": code, "left": left}
        with self._lock, (self.record_dir / "launches.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")

    def terminate(self, run_id: str) -> bool:
        with self._lock:
            proc = self._procs.get(run_id)
        if proc is None or proc.poll() is not None:
            return False
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        return True
