"""``rl-sessions-simulator serve``: prints one line, ``RL simulator listening on URL``, so a
parent process can read the URL, and serves until SIGTERM/SIGINT (exit 0)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .scenarios import DemoSweep
from .simulator.lifecycle import LIST_ORDERS
from .simulator.server import RLSimulator
from .simulator.world import SimulatedWorld

CONTROL_HELP = """\
Drive the world through the control API (no auth, JSON bodies: bind to 127.0.0.1 only):

  curl -s -X POST $URL/_sim/sessions -d '{"display_name": "sweep-a"}'   # a RUNNING session
  curl -s -X POST $URL/_sim/sessions/$SID/steps -d '{"n": 10}'
  curl -s -X POST $URL/_sim/sessions/$SID/checkpoints -d '{}'          # registered checkpoint
  curl -s -X POST $URL/_sim/sessions/$SID/stop -d '{"immediate": true}'
  curl -s -X POST $URL/_sim/faults -d '{"pattern": "GET /v1/rl/*", "status": 503, "times": 2}'
  curl -s $URL/_sim/stats

Every route is listed in rl_sessions_dagster/testing/simulator/control.py. The /v1 API itself
needs "Authorization: Bearer <--api-key>".
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-sessions-simulator", description="Local simulator of the Together RL API."
    )
    serve = parser.add_subparsers(dest="command", required=True).add_parser(
        "serve", help="serve over HTTP until SIGTERM/SIGINT", epilog=CONTROL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add = serve.add_argument
    add("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    add("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    add("--api-key", default=os.environ.get("RL_SIMULATOR_API_KEY", "sim-key"),
        help="bearer token /v1 requests must carry (default $RL_SIMULATOR_API_KEY or sim-key)")  # fmt: skip
    add("--seed", type=int, default=0, help="seed of ids and random choices")
    add("--populate", type=int, default=0, metavar="N", help="create a history of N sessions")
    add("--checkpoints-per-session", type=int, default=10)
    add("--active", type=int, default=5, help="RUNNING sessions among --populate")
    add("--list-order", choices=LIST_ORDERS, default="newest_first")
    add("--scenario", choices=("none", "demo"), default="none",
        help="'demo' replays the demo sweep in a loop, so a UI beside it always shows something")  # fmt: skip
    add("--pace", type=float, default=5.0, help="seconds between two moves of the sweep")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    world = SimulatedWorld(seed=args.seed, list_order=args.list_order)
    if args.populate > 0:
        active = min(args.active, args.populate)
        world.populate(args.populate, args.checkpoints_per_session, active, seed=args.seed)
    done = threading.Event()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: done.set())
    sim = RLSimulator(args.api_key, world, args.seed, args.port, host=args.host)
    with sim:
        print(f"RL simulator listening on {sim.base_url}", flush=True)
        if args.scenario == "demo":
            threading.Thread(target=_loop_demo, args=(world, args.pace, done), daemon=True).start()
        while not done.wait(0.2):
            pass
    return 0


def _loop_demo(world: SimulatedWorld, pace: float, done: threading.Event) -> None:
    while not done.is_set():
        DemoSweep(world, pace=pace, log=lambda m: print(m, flush=True)).run()
        if done.wait(pace * 3):
            return


if __name__ == "__main__":
    sys.exit(main())
