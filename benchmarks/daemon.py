"""Row 6 (``--daemon``): seconds from a checkpoint's registration to its evaluation run and its
result (the run's end), with the real ``dagster-daemon`` (DefaultRunCoordinator, sensor
interval 1 s; the daemon's sensor loop itself wakes every 5 s) and the simulator on 127.0.0.1.

``python -m benchmarks.daemon [SAMPLES]`` compares the run's executor: in process (what the
library's jobs use) against Dagster's default multiprocess one (a second process per step)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import dagster_daemon, prepare_dagster_home, wait_for
from tests.daemon_defs import daemon_env

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sk-bench-daemon"


def _record(instance: dg.DagsterInstance, checkpoint_id: str) -> Any:
    records = instance.get_run_records(
        filters=dg.RunsFilter(tags={"together/checkpoint_id": checkpoint_id}), limit=1
    )
    return records[0] if records else None


def run_daemon(samples: int, log: Any, executor: str = "in_process") -> dict[str, Any]:
    created: list[float] = []
    started: list[float] = []
    finished: list[float] = []
    with RLSimulator(api_key=API_KEY) as sim, tempfile.TemporaryDirectory() as tmp:
        world = sim.world
        sid = world.create_session(display_name="daemon-bench")
        home = prepare_dagster_home(Path(tmp) / "home")
        env = daemon_env("bench", sim.base_url, API_KEY, RL_BENCH_EXECUTOR=executor)
        with dagster_daemon(home, "tests.daemon_defs", working_directory=ROOT, env=env):
            instance = dg.DagsterInstance.from_config(str(home))
            sim.requests.reset()
            wait_for(lambda: sim.requests.count("GET", "/v1/rl/training-sessions") >= 2, 120,
                     "the first sensor tick", interval=0.1)  # fmt: skip
            for i in range(samples):
                world.advance_steps(sid, 10)
                cid = world.add_inference_checkpoint(sid)
                t0 = time.time()
                record = wait_for(
                    lambda c=cid: (
                        (r := _record(instance, c)) is not None and r.start_time is not None and r
                    ),
                    90,
                    "the evaluation run to start",
                    interval=0.1,
                )
                created.append(record.create_timestamp.timestamp() - t0)
                started.append(record.start_time - t0)
                log(
                    f"  daemon sample {i + 1}: run created {created[-1]:.1f} s, "
                    f"started {started[-1]:.1f} s after registration"
                )
                # Let the run finish before the next sample (one run at a time).
                done = wait_for(lambda c=cid: (r := _record(instance, c)) and r.end_time and r,
                                120, "the evaluation run to finish", interval=0.1)  # fmt: skip
                finished.append(done.end_time - t0)
                log(f"  daemon sample {i + 1}: result {finished[-1]:.1f} s after registration")
    return {"samples": samples, "executor": executor, "run_created_s": created,
            "run_started_s": started, "run_finished_s": finished}  # fmt: skip


def main(samples: int = 5) -> None:
    """Both executors, one after the other, as a markdown table."""
    results = [run_daemon(samples, print, executor) for executor in ("multiprocess", "in_process")]
    print(f"| executor ({samples} checkpoints) | run created p50 | started p50 | result p50 "
          "| result max |\n|---|---|---|---|---|")  # fmt: skip
    for r in results:
        cells = [statistics.median(r[k]) for k in ("run_created_s", "run_started_s")]
        cells += [statistics.median(r["run_finished_s"]), max(r["run_finished_s"])]
        print(f"| {r['executor']} | " + " | ".join(f"{c:.1f} s" for c in cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
