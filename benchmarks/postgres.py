"""Scale on PostgreSQL storage: the real ``dagster-daemon`` on a Dagster instance in a real
PostgreSQL, a checkpoint sensor over 100,000 sessions, both list orders.

Per list order: a fresh simulator process (``--populate N``), a fresh database on a throwaway
PostgreSQL server (``tests.pg_server``; fsync off, as for every test
cluster), and the daemon running ``tests.daemon_defs`` (``bench``) (one checkpoint sensor, interval
1 s, so ticks come back to back). After the first finished tick, it measures for ``--seconds``
while one new registered checkpoint appears on an active session every ``--pace`` seconds:

* tick time: the daemon's own tick records (end - start), finished ticks in the window;
* requests per tick: ``/v1`` requests served by the simulator in the window / ticks;
* cursor size: the sensor's stored cursor at the end;
* tick rows: rows and bytes (``pg_total_relation_size``) that the window added to
  ``job_ticks``, per tick, then per day at a 30 s interval (2,880 ticks a day per sensor).

Run: ``uv run --frozen python -m benchmarks.postgres [--sizes 100000] [--seconds 150]``.
Prints a Markdown table (BENCHMARKS.md, section "On PostgreSQL storage").
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg

from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    prepare_dagster_home,
    sensor_ticks,
    wait_for,
)
from tests.daemon_defs import daemon_env
from tests.pg_server import postgres_server

from .simproc import simulator

ROOT = Path(__file__).resolve().parents[1]
SENSOR = "together_rl_checkpoint_sensor"
TICKS_PER_DAY_AT_30S = 86_400 // 30


def _cursor(instance: dg.DagsterInstance) -> str:
    from dagster._core.scheduler.instigation import InstigatorType

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.instigator_name == SENSOR and state.instigator_data is not None:
            return state.instigator_data.cursor or ""
    return ""


def _table_stats(pg: Any, db: str) -> tuple[int, int]:
    out = pg.psql("SELECT count(*), pg_total_relation_size('job_ticks') FROM job_ticks", db)
    rows, size = out.strip().split("|")
    return int(rows), int(size)


def _row_bytes(pg: Any, db: str, after_rows: int) -> float:
    """Average stored size of the tick rows written in the window (row payload, TOAST-compressed
    columns as stored)."""
    out = pg.psql(
        "SELECT coalesce(avg(pg_column_size(t.*)), 0) FROM "
        f"(SELECT * FROM job_ticks ORDER BY id OFFSET {after_rows}) t",
        db,
    )
    return float(out.strip())


def measure(n_sessions: int, order: str, seconds: float, pace: float, log: Any) -> dict[str, Any]:
    with (
        simulator(n_sessions, list_order=order) as sim,
        postgres_server() as pg,
        tempfile.TemporaryDirectory() as tmp,
    ):
        db = pg.create_database(f"bench_{order}")
        storage = pg.dagster_storage(db)
        home = prepare_dagster_home(Path(tmp) / "home", storage=storage)
        # As in production (deploy/dagster.yaml): runs are queued, so a tick ends once its
        # runs are submitted, not launched.
        (home / "dagster.yaml").write_text(
            "telemetry:\n  enabled: false\n"
            f"storage: {json.dumps(storage)}\n"
            "run_coordinator:\n  module: dagster.core.run_coordinator\n"
            "  class: QueuedRunCoordinator\n  config:\n    max_concurrent_runs: 2\n"
        )
        env = daemon_env("bench", sim.base_url, sim.api_key)
        active = sim.session_ids("RUNNING")
        with dagster_daemon(home, "tests.daemon_defs", working_directory=ROOT, env=env):
            instance = dg.DagsterInstance.from_config(str(home))
            wait_for(lambda: sensor_ticks(instance, SENSOR), 900, "a finished tick", interval=0.5)
            # Warm-up: let the sensor finish verifying the list order before measuring.
            warm_until = time.monotonic() + min(120.0, seconds)
            while time.monotonic() < warm_until:
                time.sleep(1)
            known = {t.tick_id for t in sensor_ticks(instance, SENSOR, statuses=None)}
            rows0, bytes0 = _table_stats(pg, db)
            requests0 = sim.api_requests()
            started = time.monotonic()
            i = 0
            while time.monotonic() - started < seconds:
                sid = active[i % len(active)]
                sim.control("POST", f"/sessions/{sid}/steps", {"n": 10})
                sim.control("POST", f"/sessions/{sid}/checkpoints", {})
                i += 1
                time.sleep(pace)
            # Close the window on a finished tick so requests and ticks line up.
            ticks = [t for t in sensor_ticks(instance, SENSOR) if t.tick_id not in known]
            requests = sim.api_requests() - requests0
            rows1, bytes1 = _table_stats(pg, db)
            payload = _row_bytes(pg, db, rows0)
            cursor = _cursor(instance)
            runs = len(instance.get_runs())
    durations = [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]
    n = max(len(ticks), 1)
    growth = (bytes1 - bytes0) / max(rows1 - rows0, 1)
    row_bytes = max(growth, payload)
    result = {
        "sessions": n_sessions,
        "order": order,
        "ticks": len(ticks),
        "tick_p50_s": statistics.median(durations) if durations else float("nan"),
        "tick_max_s": max(durations) if durations else float("nan"),
        "requests_per_tick": requests / n,
        "cursor_bytes": len(cursor.encode()),
        "rows_added": rows1 - rows0,
        "bytes_per_tick_row": row_bytes,
        "payload_bytes": payload,
        "growth_bytes": growth,
        "rows_per_day": TICKS_PER_DAY_AT_30S,
        "mb_per_day": row_bytes * TICKS_PER_DAY_AT_30S / 1e6,
        "checkpoints_added": i,
        "runs": runs,
    }
    log(f"  {result}")
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| sessions | list order | ticks measured | tick p50 s | tick max s | requests/tick "
        "| cursor | job_ticks rows added / ticks | bytes per tick row (row / table growth) "
        "| per day at 30 s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['sessions']:,} | {r['order']} | {r['ticks']} | {r['tick_p50_s']:.2f} "
            f"| {r['tick_max_s']:.2f} | {r['requests_per_tick']:.1f} "
            f"| {r['cursor_bytes'] / 1024:.1f} KB | {r['rows_added']} / {r['ticks']} "
            f"| {r['payload_bytes']:,.0f} / {r['growth_bytes']:,.0f} "
            f"| {r['rows_per_day']:,} rows, "
            f"{r['mb_per_day']:.1f} MB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--orders", default="newest_first,unordered")
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--pace", type=float, default=10.0)
    args = parser.parse_args()
    results = [
        measure(int(size), order, args.seconds, args.pace, print)
        for size in args.sizes.split(",")
        for order in args.orders.split(",")
    ]
    print(table(results))


if __name__ == "__main__":
    main()
