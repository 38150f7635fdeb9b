"""The one-command demo: a simulated sweep, the real dagster-daemon, and a summary.

``python -m example_repo.demo`` (or ``bash scripts/demo.sh``) starts the local simulator of the
Together RL API, a fresh Dagster instance under ``.demo/dagster_home`` and ``dagster-daemon``
loading ``example_repo.component_defs`` (the YAML Component); then a scripted sweep trains.
Its one routed sensor launches one
evaluation run per registered checkpoint and one report run per finished session; the sync job
fills the sessions table. It prints live progress and a summary, stops every process it
started, and exits 0 when everything expected happened (1 otherwise). No API key or network.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dagster as dg

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    sensor_ticks,
)
from rl_sessions_dagster.testing.scenarios import DemoSweep, wait_until

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sim-demo-key"
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])
SYNC_KEY = "together/rl_sessions_table"
#: The demo runs the Component-configured project (defs/together_rl/defs.yaml).
DEFINITIONS = "example_repo.component_defs"
SENSOR = "together_rl_events"  # one routed sensor: evaluations and reports from one poll


def _say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(instance.get_runs())


def _progress(instance: dg.DagsterInstance, sim: RLSimulator) -> str:
    statuses = Counter(s["status"].rsplit("_", 1)[-1] for s in sim.world.sessions())
    runs = Counter(f"{r.job_name}:{r.status.value}" for r in _runs(instance))
    sessions = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    launched = ", ".join(f"{n} {k}" for k, n in sorted(runs.items())) or "none yet"
    return f"sessions: {sessions} | runs: {launched}"


def _expected_done(instance: dg.DagsterInstance, sweep: DemoSweep) -> bool:
    if not sweep.outcome.finished:
        return False
    runs = _runs(instance)
    done = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}
    evals = [r for r in runs if r.job_name == "evaluate_checkpoint" and r.status in done]
    reports = [r for r in runs if r.job_name == "finished_session_report" and r.status in done]
    return len(evals) >= len(sweep.outcome.checkpoints) and len(reports) >= 3


def _run_sync(home: Path, env: dict[str, str]) -> int:
    """One run of the sync job through the CLI, recorded in the same instance."""
    cmd = [str(Path(sys.executable).with_name("dagster")), "asset", "materialize",
           "-m", DEFINITIONS, "--select", SYNC_KEY]
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    done = subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True,
                          timeout=300, start_new_session=True)
    if done.returncode != 0:
        _say("sync run failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
    return done.returncode


def summarize(instance: dg.DagsterInstance, sim: RLSimulator, sweep: DemoSweep,
              home: Path) -> dict:
    """Per checkpoint: step and score; per session: final status and its report run."""
    scores: dict[str, list[float]] = {}
    partitions: dict[str, str] = {}
    for record in instance.fetch_materializations(EVAL_KEY, limit=1000).records:
        mat = record.asset_materialization
        if mat is not None and mat.partition:
            ckpt = str(mat.metadata["checkpoint_id"].value)
            partitions[ckpt] = mat.partition
            scores.setdefault(ckpt, []).append(float(mat.metadata["score"].value))
    runs = _runs(instance)
    reports = {r.tags.get("together/session_id"): r for r in runs
               if r.job_name == "finished_session_report"}
    checkpoints = []
    for ckpt, (sid, step) in sweep.outcome.checkpoints.items():
        checkpoints.append({"checkpoint": ckpt, "partition": partitions.get(ckpt),
                            "session": sid, "step": step, "scores": scores.get(ckpt, [])})
    sessions = []
    for sid, role in sweep.outcome.sessions.items():
        wire = sim.world.session(sid)
        run = reports.get(sid)
        sessions.append({
            "session": sid, "role": role, "name": wire.get("display_name"),
            "status": wire["status"].rsplit("_", 1)[-1],
            "error": (wire.get("error") or {}).get("code"),
            "report_run": run.status.value if run else None,
            "report_runs": sum(r.tags.get("together/session_id") == sid for r in runs
                               if r.job_name == "finished_session_report"),
        })
    db = home / "together_rl_sync.sqlite"
    table = {}
    if db.exists():
        with sqlite3.connect(db) as conn:
            for name in ("rl_sessions", "rl_checkpoints"):
                table[name] = conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
    return {"checkpoints": checkpoints, "sessions": sessions, "sync_rows": table,
            "runs": Counter(f"{r.job_name}:{r.status.value}" for r in runs)}


def print_summary(summary: dict) -> None:
    print("\nCheckpoints (one evaluation run each; partition key = <session>/<step>/<checkpoint>)")
    print(f"  {'partition':<30} {'session':<10} {'step':>5} {'score':>6}  runs")
    for c in sorted(summary["checkpoints"], key=lambda c: (c["session"], c["step"])):
        score = f"{c['scores'][0]:.2f}" if c["scores"] else "-"
        label = c["partition"] or c["checkpoint"]
        print(f"  {label:<30} {c['session'][:8]:<10} {c['step']:>5} {score:>6}  "
              f"{len(c['scores'])}")
    print("\nSessions (one report run each)")
    print(f"  {'session':<10} {'name':<15} {'final status':<13} {'error':<44} report run")
    for s in summary["sessions"]:
        print(f"  {s['session'][:8]:<10} {s['name'] or '':<15} {s['status']:<13} "
              f"{s['error'] or '-':<44} {s['report_run'] or 'none'}")
    rows = summary["sync_rows"]
    print(f"\nSync table: {rows.get('rl_sessions', 0)} sessions, "
          f"{rows.get('rl_checkpoints', 0)} checkpoints")


def check(summary: dict) -> list[str]:
    """What must hold for the demo to pass (also asserted by tests/test_demo.py)."""
    problems = []
    for c in summary["checkpoints"]:
        if len(c["scores"]) != 1:
            problems.append(f"checkpoint {c['checkpoint']} evaluated {len(c['scores'])} times")
    for s in summary["sessions"]:
        if s["report_runs"] != 1 or s["report_run"] != "SUCCESS":
            problems.append(f"session {s['session']} has {s['report_runs']} report runs "
                            f"({s['report_run']})")
    if summary["sync_rows"].get("rl_sessions", 0) < len(summary["sessions"]):
        problems.append(f"sync table has {summary['sync_rows']} rows")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=ROOT / ".demo" / "dagster_home",
                        help="DAGSTER_HOME to create (wiped first, so reruns start clean)")
    parser.add_argument("--pace", type=float, default=4.0,
                        help="seconds between two moves of the sweep")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="give up after this (it stops as soon as everything happened)")
    parser.add_argument("--port", type=int, default=0, help="simulator port (0: any free)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    home = prepare_dagster_home(args.home.resolve(), clean=True)
    with RLSimulator(api_key=API_KEY, port=args.port, seed=42) as sim:
        _say(f"simulator of the Together RL API on {sim.base_url}; DAGSTER_HOME={home}")
        env = {"TOGETHER_API_KEY": API_KEY, "TOGETHER_BASE_URL": sim.base_url,
               "RL_SENSOR_INTERVAL_SECONDS": "2"}
        with dagster_daemon(home, DEFINITIONS, working_directory=ROOT,
                            env=env) as daemon:
            _say(f"dagster-daemon started (pid {daemon.pid}); waiting for the sensors' first tick")
            instance = dg.DagsterInstance.from_config(str(home))
            first_tick = max(90.0, args.timeout / 2)  # a loaded machine starts the daemon slowly
            ready = wait_until(lambda: sensor_ticks(instance, SENSOR), first_tick)
            if not ready:
                _say(f"the sensor did not tick within {first_tick:g} s; see "
                     + str(home / "daemon.log"))
                return 1
            sweep = DemoSweep(sim.world, pace=args.pace, log=lambda m: _say("sweep: " + m))
            sweep.start()
            last = ""
            while time.monotonic() - started < args.timeout - 25:
                line = _progress(instance, sim)
                if line != last:
                    _say(line)
                    last = line
                if _expected_done(instance, sweep):
                    break
                time.sleep(1)
            sweep.stop()
            _say("running the sessions/checkpoints sync job once")
            _run_sync(home, env)
            summary = summarize(instance, sim, sweep, home)
            pgid = daemon.pid
        left = group_alive(pgid)
    print_summary(summary)
    problems = check(summary)
    if left:
        problems.append("dagster-daemon process group still alive")
    summary["daemon_pgid"] = pgid
    summary["problems"] = problems
    summary["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, default=str))
    if problems:
        _say("demo FAILED: " + "; ".join(problems))
        return 1
    _say(f"demo OK in {summary['seconds']} s: every checkpoint evaluated once, every finished "
         "session reported once, sync table filled; all processes stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
