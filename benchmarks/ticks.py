"""Rows 1 and 2: steady-state sensor ticks and cursor sizes, four sensors side by side.

For each world size and list order: a fresh simulator (own process) populated with
``n`` historical sessions, 50 active with 10 checkpoints each. Every sensor takes its first
tick (baseline, no events); ours then ticks until its first complete verification pass of the
list order is done (``TrackerState.order`` no longer "unverified"). After that, each round
makes one small change to the world and ticks every sensor once (rotating who goes first);
each tick is timed, its API requests are counted by the simulator, and its events must equal
the change's expected events exactly. A sensor leaves the rounds once its measured ticks have
used up the per-sensor time budget (so naive sensors at 100k take one or two samples).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from rl_sessions_dagster.api import Checkpoint

from .drivers import Event, NaiveGet, NaiveList, OursCore, OursSensor, Tick, verified
from .quiet import lateness_bound, terminal_pages
from .simproc import SimProcess, simulator

ORDERS = ("newest_first", "unordered")
MAX_WARMUP_TICKS = 12
#: Ticks without changes after the rounds, for events still owed (late, or lost?). Ours in an
#: unordered world get the design bound instead (see :func:`_drain_ticks`).
MAX_DRAIN_TICKS = 4


@dataclass
class SensorRun:
    key: str
    name: str
    times_s: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    cursor_bytes: list[int] = field(default_factory=list)
    warmup: list[tuple[float, int]] = field(default_factory=list)  # (seconds, requests)
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rounds: int = 0
    #: events due from earlier changes but not announced yet (a read stopped at the budget).
    owed: set[Event] = field(default_factory=set)
    #: how many ticks late each late event came (0-tick-late events are not listed).
    late_ticks: list[int] = field(default_factory=list)
    owed_since: dict[Event, int] = field(default_factory=dict)


@dataclass
class TickCase:
    n_sessions: int
    order: str
    runs: dict[str, SensorRun]
    changes: list[str]
    seconds: float = 0.0


class World:
    """Small realistic changes between ticks, each with the events it must produce."""

    def __init__(self, sim: SimProcess, seed: int) -> None:
        self.sim = sim
        self.rng = random.Random(seed)
        self.active = sim.session_ids("RUNNING")
        if not self.active:
            raise RuntimeError("the simulated world has no active session")

    def _checkpoint(self) -> tuple[str, set[Event]]:
        sid = self.rng.choice(self.active)
        self.sim.control("POST", f"/sessions/{sid}/steps", {"n": 10})
        doc = self.sim.control("POST", f"/sessions/{sid}/checkpoints", {"type": "inference"})
        cid = doc["id"]
        expected: set[Event] = {("checkpoint_created", sid, cid)}
        if Checkpoint.model_validate(doc).is_registered:
            expected.add(("checkpoint_registered", sid, cid))
        return "new checkpoint", expected

    def _stop_and_replace(self) -> tuple[str, set[Event]]:
        sid = self.rng.choice(self.active)
        self.active.remove(sid)
        self.sim.control("POST", f"/sessions/{sid}/stop", {"immediate": True})
        resource = self._resource_of(sid)
        new = self.sim.control("POST", "/sessions", {"resource_id": resource})["id"]
        self.active.append(new)
        return "a session stops, another starts", {
            ("session_stopped", sid, None),
            ("session_status_changed", new, None),
        }

    def _born_failed(self) -> tuple[str, set[Event]]:
        sid = self.sim.control("POST", "/sessions", {"fail_at_creation": True})["id"]
        return "a session is born and fails between ticks", {("session_error", sid, None)}

    def _resource_of(self, sid: str) -> str:
        headers = {"Authorization": f"Bearer {self.sim.api_key}"}
        doc = self.sim._control.get(f"/v1/rl/training-sessions/{sid}", headers=headers).json()
        return str(doc["model_resources_id"])

    def change(self, round_no: int) -> tuple[str, set[Event]]:
        """Round 0, 3, 6...: a checkpoint; 1, 4...: + a stop/start; 2, 5...: + a born-failed."""
        label, expected = self._checkpoint()
        extra: Callable[[], tuple[str, set[Event]]] | None = None
        if round_no % 3 == 1:
            extra = self._stop_and_replace
        elif round_no % 3 == 2:
            extra = self._born_failed
        if extra is not None:
            more_label, more = extra()
            label, expected = f"{label} + {more_label}", expected | more
        return label, expected


def _timed(sim: SimProcess, driver: Any) -> tuple[Tick, float, int]:
    before = sim.api_requests()
    started = time.perf_counter()
    tick = driver.tick()
    elapsed = time.perf_counter() - started
    return tick, elapsed, sim.api_requests() - before


def _describe(events: set[Event]) -> str:
    return ", ".join(sorted(f"{k}:{s[:8]}{':' + c[:8] if c else ''}" for k, s, c in events))


def _account(run: SensorRun, r: int, label: str, expected: set[Event], got: set[Event]) -> None:
    """Exactly once: nothing beyond what is due; what is due and not seen yet stays owed."""
    due = expected | run.owed
    extra = got - due
    if extra:
        run.mismatches.append(f"round {r} ({label}): unexpected [{_describe(extra)}]")
    for event in got & run.owed:
        run.late_ticks.append(r - run.owed_since.pop(event))
    for event in expected - got:
        run.owed_since[event] = r
    run.owed = due - got


def _drain_ticks(driver: Any, unordered_bound: int | None) -> int:
    """How long an owed event may still come. With no time order (``unordered_bound`` set),
    ours find a session born and ended between two ticks within two passes of the
    finished-session scan (the bound the quiet-tick benchmark checks); a naive sensor reads
    everything every tick, so a few ticks tell late from lost."""
    if driver.key.startswith("ours") and unordered_bound is not None:
        return max(MAX_DRAIN_TICKS, unordered_bound)
    return MAX_DRAIN_TICKS


def run_case(
    n_sessions: int,
    order: str,
    *,
    repeats: int,
    budget_s: float,
    seed: int,
    log: Callable[[str], None],
) -> TickCase:
    started = time.perf_counter()
    with simulator(n_sessions, list_order=order, seed=seed) as sim, dg.instance_for_test() as inst:
        drivers: list[Any] = [
            OursSensor(sim.base_url, sim.api_key, inst),
            OursCore(sim.base_url, sim.api_key),
            NaiveList(sim.base_url, sim.api_key),
            NaiveGet(sim.base_url, sim.api_key),
        ]
        runs = {d.key: SensorRun(d.key, d.name) for d in drivers}
        world = World(sim, seed)
        # Warm-up: every sensor's first tick, then ours until its verification pass is done.
        for d in drivers:
            tick, seconds, n = _timed(sim, d)
            runs[d.key].warmup.append((seconds, n))
            if tick.events:
                runs[d.key].mismatches.append(f"first tick announced {len(tick.events)} event(s)")
        ours = [d for d in drivers if d.key.startswith("ours")]
        for _ in range(MAX_WARMUP_TICKS):
            pending = [d for d in ours if not verified(d.cursor)]
            if not pending:
                break
            for d in pending:
                tick, seconds, n = _timed(sim, d)
                runs[d.key].warmup.append((seconds, n))
                if tick.events:
                    runs[d.key].mismatches.append(f"warm-up tick announced {tick.events}")
        for d in ours:
            if not verified(d.cursor):
                runs[d.key].notes.append("verification pass not finished after warm-up")
        log(f"  {n_sessions:>7} {order:<12} warm-up done in {time.perf_counter() - started:.1f} s")
        changes: list[str] = []
        in_play = list(drivers)
        for r in range(repeats):
            if not in_play:
                break
            label, expected = world.change(r)
            changes.append(label)
            shift = r % len(in_play)
            for d in in_play[shift:] + in_play[:shift]:
                tick, seconds, n = _timed(sim, d)
                run = runs[d.key]
                run.rounds += 1
                run.times_s.append(seconds)
                run.requests.append(n)
                run.cursor_bytes.append(len(tick.cursor.encode()))
                if tick.note:
                    run.notes.append(f"round {r}: {tick.note}")
                _account(run, r, label, expected, tick.events)
            in_play = [d for d in in_play if sum(runs[d.key].times_s) < budget_s]
        # Events still owed (late, not lost?): more ticks without changes, up to the bound.
        bound = None if order == "newest_first" else lateness_bound(terminal_pages(sim))
        for d in drivers:
            run = runs[d.key]
            drain = _drain_ticks(d, bound)
            for extra_tick in range(drain):
                if not run.owed:
                    break
                tick = d.tick()
                _account(run, len(changes) + extra_tick, "no change (drain)", set(), tick.events)
            if run.owed:
                run.mismatches.append(
                    f"never announced within {drain} ticks: [{_describe(run.owed)}]"
                )
        case = TickCase(n_sessions, order, runs, changes, time.perf_counter() - started)
        log(f"  {n_sessions:>7} {order:<12} {len(changes)} rounds in {case.seconds:.1f} s")
        return case


def run_ticks(
    sizes: list[int],
    *,
    repeats: int,
    budget_s: float,
    seed: int,
    log: Callable[[str], None],
) -> list[TickCase]:
    return [
        run_case(n, order, repeats=repeats, budget_s=budget_s, seed=seed, log=log)
        for n in sizes
        for order in ORDERS
    ]
