"""The one-command demo: a simulated sweep, the real dagster-daemon, and a summary.

``python -m example_repo.demo`` (or ``bash scripts/demo.sh``) starts the local simulator of the
Together RL API, a fresh Dagster instance under ``.demo/dagster_home`` and ``dagster-daemon``
loading ``example_repo.component_defs`` (the YAML Component); then a scripted sweep trains.
Its one routed sensor launches one
evaluation run per registered checkpoint and one built-in report run per finished session; the
champion sensor names each sweep's best checkpoint as evaluations land and runs
``deploy_champion`` once per tick that ends with a new champion; the sync job fills the sessions table. On the GPU side, a model resource is provisioned (PENDING → READY),
every model-resource event runs ``gpu_notice`` once (which also refreshes the spend asset), and
the idle guard, acting, stops the resources left READY with no session. It prints live
progress and a summary (with the spend table), stops every process it started, and exits 0
when everything expected happened (1 otherwise). No API key or network.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import dagster as dg

from example_repo.demo_checks import check, print_summary
from example_repo.demo_summary import (
    _DONE,
    API_KEY,
    DEFINITIONS,
    GPU_SENSOR,
    ROOT,
    SENSOR,
    _expected_done,
    _noticed,
    _progress,
    _run_sync,
    _runs,
    _say,
    summarize,
)
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    sensor_ticks,
)
from rl_sessions_dagster.testing.scenarios import DemoSweep, wait_until


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home",
        type=Path,
        default=ROOT / ".demo" / "dagster_home",
        help="DAGSTER_HOME to create (wiped first, so reruns start clean)",
    )
    parser.add_argument(
        "--pace", type=float, default=4.0, help="seconds between two moves of the sweep"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="give up after this (it stops as soon as everything happened)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=10.0,
        help="the idle guard stops a READY resource with no session this long",
    )
    parser.add_argument("--port", type=int, default=0, help="simulator port (0: any free)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    home = prepare_dagster_home(args.home.resolve(), clean=True)
    with RLSimulator(api_key=API_KEY, port=args.port, seed=42) as sim:
        _say(f"simulator of the Together RL API on {sim.base_url}; DAGSTER_HOME={home}")
        env = {
            "TOGETHER_API_KEY": API_KEY,
            "TOGETHER_BASE_URL": sim.base_url,
            "RL_SENSOR_INTERVAL_SECONDS": "2",
            "RL_IDLE_SECONDS": f"{args.idle_seconds:g}",
        }
        with dagster_daemon(home, DEFINITIONS, working_directory=ROOT, env=env) as daemon:
            _say(f"dagster-daemon started (pid {daemon.pid}); waiting for the sensors' first tick")
            instance = dg.DagsterInstance.from_config(str(home))
            first_tick = max(90.0, args.timeout / 2)  # a loaded machine starts the daemon slowly
            ready = wait_until(
                lambda: sensor_ticks(instance, SENSOR) and sensor_ticks(instance, GPU_SENSOR),
                first_tick,
            )
            if not ready:
                _say(
                    f"the sensor did not tick within {first_tick:g} s; see "
                    + str(home / "daemon.log")
                )
                return 1
            sweep = DemoSweep(
                sim.world,
                pace=args.pace,
                log=lambda m: _say("sweep: " + m),
                noticed=lambda rid: _noticed(instance, rid),
            )
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
            _say("materializing the sync table and the spend asset once more")
            _run_sync(home, env)
            # the sync schedule runs too: let a run it started meanwhile end before the daemon does
            wait_until(lambda: all(r.status in _DONE for r in _runs(instance)), 120)
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
    _say(
        f"demo OK in {summary['seconds']} s: every checkpoint evaluated once, every finished "
        "session reported once, each sweep's champion named as better checkpoints landed, "
        "every GPU event noticed once, idle GPUs stopped, no GPU "
        "billing, spend and sync tables filled; all processes stopped"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
