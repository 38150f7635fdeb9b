"""Quiet ticks by list order and by pending registrations (issues #8 and #12).

For each world size and each of the three list orders a real service plausibly uses
(newest first, oldest first, no time order), a populated simulator in its own process, and
the two preset sensors evaluated like the daemon does (``evaluate_tick``): after their warm-up
(first tick, order verification), quiet ticks are counted (API requests, seen by the
simulator) and timed. Then, with the order known:

* pending registrations: 50 finished sessions each holding an unregistered inference
  checkpoint, pushed out of the finished-session list's first page by 150 newer sessions;
* lateness: a session born and ended between two ticks, at several points of the scan pass;
  how many ticks until it is announced, against the documented bound.

Run: ``uv run --frozen python -m benchmarks.quiet [--sizes 10000 100000] [--samples 3]``.
"""

import argparse
import contextlib
import io
import json
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    TogetherRLResource,
    build_session_sensor,
)
from rl_sessions_dagster.core import TrackerState
from rl_sessions_dagster.core.events import TERMINAL_EVENTS

from .drivers import bench_job as quiet_job
from .simproc import API_KEY, SimProcess, simulator

ORDERS = ("newest_first", "oldest_first", "unordered")
UNORDERED_PAGES_PER_TICK = 8


class Sensor:
    def __init__(self, sensor: dg.SensorDefinition, base_url: str, instance: Any) -> None:
        self.defs = dg.Definitions(
            jobs=[quiet_job],
            sensors=[sensor],
            resources={"together": TogetherRLResource(api_key=API_KEY, base_url=base_url)},
        )
        self.name = sensor.name
        self.sensor = self.defs.resolve_sensor_def(sensor.name)
        self.instance = instance
        self.cursor: str | None = None

    def tick(self) -> set[str]:
        with (
            contextlib.redirect_stderr(io.StringIO()),
            dg.build_sensor_context(
                instance=self.instance,
                instance_ref=self.instance.get_ref(),
                definitions=self.defs,
                cursor=self.cursor,
                resources={"together": self.defs.resources["together"]},
                sensor_name=self.name,
            ) as ctx,
        ):
            data = self.sensor.evaluate_tick(ctx)
        if data.cursor is not None:
            self.cursor = data.cursor
        return {r.run_key for r in data.run_requests if r.run_key}

    @property
    def state(self) -> TrackerState:
        return TrackerState.from_cursor(self.cursor)


@dataclass
class Row:
    n: int
    order: str
    sensor: str
    requests: list[int] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    cursor_bytes: int = 0
    warmup_ticks: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _measure(sim: SimProcess, sensor: Sensor, ticks: int) -> tuple[list[int], list[float]]:
    requests, times = [], []
    for _ in range(ticks):
        sim.reset_requests()
        started = time.perf_counter()
        events = sensor.tick()
        times.append((time.perf_counter() - started) * 1000)
        requests.append(sim.api_requests())
        if events:
            raise AssertionError(f"a quiet tick announced {events}")
    return requests, times


def _warm(sensor: Sensor, max_ticks: int = 400) -> int:
    """Ticks until the first tick's work is done: discovery, and (sensors of session events,
    which scan the finished-session list) the verification of the list's order."""
    scans = "status" in sensor.name
    for i in range(1, max_ticks + 1):
        sensor.tick()
        state = sensor.state
        verified = state.order.value != "unverified" and state.scan is None
        if state.initialized and state.discovery is None and (verified or not scans):
            return i
    raise AssertionError(f"{sensor.name} did not verify the list order in {max_ticks} ticks")


def terminal_pages(sim: SimProcess) -> int:
    """Pages (of 100) of the finished-session list."""
    stats = sim.control("GET", "/stats")
    by_status = stats.get("world", stats).get("sessions_by_status", {})
    done = sum(v for k, v in by_status.items() if k.endswith(("STOPPED", "ERROR", "EXPIRED")))
    return max(1, math.ceil(done / 100))


def lateness_bound(pages: int) -> int:
    """Ticks within which, with no time order, a session born and ended between two ticks is
    announced: two passes of the ``pages`` of the finished-session scan, plus the tick it ends
    in."""
    return 2 * math.ceil(pages / UNORDERED_PAGES_PER_TICK) + 1


def run_case(n: int, order: str, samples: int, ticks: int) -> list[Row]:
    rows: list[Row] = []
    with simulator(n, list_order=order) as sim, dg.instance_for_test() as instance:
        sensors = [
            Sensor(
                build_session_sensor(
                    name="together_rl_checkpoint_sensor",
                    routes=[
                        EventRoute(
                            [EventKind.CHECKPOINT_REGISTERED], job=quiet_job, partitions_def=None
                        )
                    ],
                ),
                sim.base_url,
                instance,
            ),
            Sensor(
                build_session_sensor(
                    name="together_rl_session_status_sensor",
                    routes=[EventRoute(TERMINAL_EVENTS, job=quiet_job)],
                ),
                sim.base_url,
                instance,
            ),
        ]
        for s in sensors:
            row = Row(n, order, s.name, warmup_ticks=_warm(s))
            row.requests, row.times_ms = _measure(sim, s, ticks)
            row.cursor_bytes = len(s.cursor or "")
            rows.append(row)
        if order == "newest_first" or n <= 10_000:
            rows.append(_pending_registrations(sim, sensors[0], n, order, ticks))
        if order == "unordered":
            rows[1].extra["lateness"] = _lateness(sim, sensors[1], samples)
    return rows


def _pending_registrations(sim: SimProcess, sensor: Sensor, n: int, order: str, ticks: int) -> Row:
    """50 finished sessions wait for a registration, far from the list's first page."""
    for _ in range(50):
        sid = sim.control("POST", "/sessions", {"display_name": "sweep"})["id"]
        sim.control("POST", f"/sessions/{sid}/checkpoints", {"registered": False})
        sim.control("POST", f"/sessions/{sid}/stop", {"immediate": True})
    for _ in range(150):
        sid = sim.control("POST", "/sessions", {"display_name": "later"})["id"]
        sim.control("POST", f"/sessions/{sid}/stop", {"immediate": True})
    for _ in range(3):
        sensor.tick()
    # Later on: the sweep is past the look-back window (10 min) of the finished-session scan.
    sim.control("POST", "/clock/advance", {"seconds": 900})
    for _ in range(3):
        sensor.tick()
    lingering = sum(1 for t in sensor.state.tracked.values() if t.lingering)
    row = Row(n, order, sensor.name + " + 50 pending registrations")
    row.requests, row.times_ms = _measure(sim, sensor, ticks)
    row.cursor_bytes = len(sensor.cursor or "")
    row.extra["lingering"] = lingering
    return row


def _lateness(sim: SimProcess, sensor: Sensor, samples: int) -> dict[str, Any]:
    """Ticks until a session born and ended between two ticks is announced."""
    pages = terminal_pages(sim)
    bound = lateness_bound(pages)
    late: list[int] = []
    for i in range(samples):
        for _ in range(i * max(1, bound // (2 * samples))):  # start at another point of a pass
            sensor.tick()
        sid = sim.control("POST", "/sessions", {"display_name": "flash"})["id"]
        sim.control("POST", f"/sessions/{sid}/fail", {"message": "capacity"})
        key = f"session_error:{sid}"
        for t in range(1, 3 * bound):
            if key in sensor.tick():
                late.append(t)
                break
        else:
            late.append(-1)
    return {"bound_ticks": bound, "ticks": late, "worst": max(late), "pages": pages}


def markdown(rows: list[Row]) -> str:
    out = [
        "| sessions | list order | sensor | requests / quiet tick (p50, max) | p50 tick | "
        "cursor | warm-up ticks |",
        "|---:|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        req = f"{statistics.median(r.requests):.0f}, {max(r.requests)}"
        out.append(
            f"| {r.n:,} | {r.order} | {r.sensor} | {req} | "
            f"{statistics.median(r.times_ms):.0f} ms | {r.cursor_bytes:,} B | "
            f"{r.warmup_ticks or '-'} |"
        )
    late = [r for r in rows if "lateness" in r.extra]
    if late:
        out += ["", "| sessions | unordered: pages of finished sessions | bound (ticks) | "
                "measured lateness (ticks) |", "|---:|---:|---:|---|"]  # fmt: skip
        for r in late:
            lt = r.extra["lateness"]
            out.append(f"| {r.n:,} | {lt['pages']} | {lt['bound_ticks']} | {lt['ticks']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> list[Row]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--orders", nargs="+", default=list(ORDERS), choices=ORDERS)
    p.add_argument("--ticks", type=int, default=10)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = p.parse_args(argv)
    rows: list[Row] = []
    for n in args.sizes:
        for order in args.orders:
            started = time.monotonic()
            case = run_case(n, order, args.samples, args.ticks)
            rows += case
            print(f"# {n} {order}: {time.monotonic() - started:.0f} s", flush=True)
    print(markdown(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.__dict__ for r in rows], f, indent=1)
    return rows


if __name__ == "__main__":
    main()
