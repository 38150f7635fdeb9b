"""The sync's cost by run kind (issue #30): API requests and wall time of a first run (a full
walk that saves the state), a quiet incremental run, a run after changes, and a reconciliation
walk, beside the naive full walk every run used to make.

For each world size, a populated simulator in its own process (50 active sessions, the rest
finished, 2 checkpoints each), the sync run as the asset runs it (its run body, no Dagster run
around it) into a SQLite file; requests are counted by the simulator. "After changes": 5 new
sessions, 5 active sessions stopped, 5 new checkpoints and 2 sessions born and ended between
two runs, all within the window.

Run: ``uv run --frozen python -m benchmarks.sync [--sizes 10000 100000] [--quiet 5]``.
"""

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api.clock import ServerClock
from rl_sessions_dagster.assets.sync import SyncConfig, _Run, run_sync
from rl_sessions_dagster.assets.sync_reading import SyncStats
from rl_sessions_dagster.storage import SQLAlchemyTableStore

from .simproc import API_KEY, SimProcess, simulator

LOG = logging.getLogger("benchmarks.sync")
KEY = "together/rl_sessions_table"


def _client(sim: SimProcess, clock: ServerClock | None = None) -> Any:
    resource = TogetherRLResource(api_key=API_KEY, base_url=sim.base_url)
    return resource.get_client(server_clock=clock)


def measure(sim: SimProcess, work: Callable[[], SyncStats]) -> tuple[int, float, SyncStats]:
    sim.reset_requests()
    started = time.perf_counter()
    stats = work()
    return sim.api_requests(), time.perf_counter() - started, stats


def sync_run(sim: SimProcess, store: SQLAlchemyTableStore, **config: Any) -> SyncStats:
    clock = ServerClock()
    with _client(sim, clock) as client:
        run = _Run(LOG, client, clock, store, SyncConfig(**config), None, [], lambda _: None)
        return run.sync(KEY)


def naive_walk(sim: SimProcess, store: SQLAlchemyTableStore) -> SyncStats:
    """What every run did before: list everything, upsert everything, mark the rest."""
    with _client(sim) as client:
        return run_sync(client.list_sessions(page_size=100), store, mark_missing=True)


def changes(sim: SimProcess) -> None:
    running = sim.session_ids("RUNNING")
    for _ in range(5):
        sim.control("POST", "/sessions", {"display_name": "bench-new"})
    for sid in running[:5]:
        sim.control("POST", f"/sessions/{sid}/stop", {"immediate": True})
    for sid in running[5:10]:
        sim.control("POST", f"/sessions/{sid}/checkpoints", {})
    for _ in range(2):
        sid = sim.control("POST", "/sessions", {"display_name": "bench-flash"})["id"]
        sim.control("POST", f"/sessions/{sid}/stop", {"immediate": True})


def written(stats: SyncStats) -> str:
    w = stats.sessions_written + stats.checkpoints_written
    return f"{w.inserted} / {w.updated} / {stats.sessions_marked_missing}"


def bench(size: int, quiet: int) -> list[tuple[str, int, float, str]]:
    rows: list[tuple[str, int, float, str]] = []
    with (
        simulator(size, active=50, checkpoints_per_session=2) as sim,
        tempfile.TemporaryDirectory() as tmp,
    ):
        with SQLAlchemyTableStore(str(Path(tmp) / "naive.db")) as store:
            naive_walk(sim, store)  # the table exists: the naive run measured is a re-run
            n, s, st = measure(sim, lambda: naive_walk(sim, store))
            rows.append(("naive full walk (every run before)", n, s, written(st)))
        with SQLAlchemyTableStore(str(Path(tmp) / "sync.db")) as store:
            n, s, st = measure(sim, lambda: sync_run(sim, store))
            rows.append(("first run (full walk, saves the state)", n, s, written(st)))
            sim.control("POST", "/clock/advance", {"seconds": 30})
            sync_run(sim, store)  # the first incremental run after the walk
            samples = []
            for _ in range(quiet):
                sim.control("POST", "/clock/advance", {"seconds": 30})
                samples.append(measure(sim, lambda: sync_run(sim, store)))
            n = max(r for r, _, _ in samples)
            s = statistics.median(t for _, t, _ in samples)
            rows.append((f"quiet incremental run (max of {quiet}, p50 time)", n, s, "0 / 0 / 0"))
            changes(sim)
            sim.control("POST", "/clock/advance", {"seconds": 30})
            n, s, st = measure(sim, lambda: sync_run(sim, store))
            rows.append(("incremental run after changes", n, s, written(st)))
            sim.control("POST", "/clock/advance", {"seconds": 30})
            n, s, st = measure(sim, lambda: sync_run(sim, store, full=True))
            rows.append(("reconciliation (full: true)", n, s, written(st)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--quiet", type=int, default=5)
    args = parser.parse_args()
    print(
        "| sessions | run | API requests | wall time | rows inserted / updated / marked missing |"
    )
    print("|---:|---|---:|---:|---|")
    for size in args.sizes:
        for name, n, s, w in bench(size, args.quiet):
            print(f"| {size:,} | {name} | {n:,} | {s:.2f} s | {w} |", flush=True)


if __name__ == "__main__":
    main()
