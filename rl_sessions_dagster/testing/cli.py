"""Command line: ``rl-sessions-simulator serve --port 0 --api-key K [--seed N] [--populate N]``.

Prints exactly one line, ``RL simulator listening on http://127.0.0.1:PORT``, flushed, so a
parent process can read the URL; serves until SIGTERM/SIGINT and exits 0. Drive the world of a
running simulator through its ``/_sim/*`` control endpoints.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .simulator.server import RLSimulator
from .simulator.world import SimulatedWorld

CONTROL_HELP = """\
control API (no auth; JSON bodies; bind to 127.0.0.1 only). With URL set to the printed address:

  # create a session (answers with the session as the API would return it)
  curl -s -X POST $URL/_sim/sessions -d '{"display_name": "sweep-a"}'
  # train 10 steps, then save a registered inference checkpoint at the current step
  curl -s -X POST $URL/_sim/sessions/$SID/steps -d '{"n": 10}'
  curl -s -X POST $URL/_sim/sessions/$SID/checkpoints -d '{}'
  # a checkpoint whose registration comes late, then register it
  curl -s -X POST $URL/_sim/sessions/$SID/checkpoints -d '{"registered": false}'
  curl -s -X POST $URL/_sim/checkpoints/$CID/register
  # end a session: stop, fail (ERROR with a code and message), or expire its resource
  curl -s -X POST $URL/_sim/sessions/$SID/stop -d '{"immediate": true}'
  curl -s -X POST $URL/_sim/sessions/$SID/fail -d '{"message": "boom"}'
  curl -s -X POST $URL/_sim/resources/$RID/expire
  # the world's clock, faults, and what was served
  curl -s -X POST $URL/_sim/clock/advance -d '{"seconds": 60}'
  curl -s -X POST $URL/_sim/faults -d '{"pattern": "GET /v1/rl/training-sessions", "status": 503, "times": 2}'
  curl -s $URL/_sim/stats

Calls on one object answer {"ok": true, "result": ..., "session"|"checkpoint"|"resource": {...}}
with the object as changed. The /v1 API itself needs "Authorization: Bearer <--api-key>".
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rl-sessions-simulator",
        description="Local simulator of the Together RL API.",
        epilog=CONTROL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve the simulator over HTTP until SIGTERM/SIGINT",
        epilog=CONTROL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    serve.add_argument(
        "--api-key",
        default=os.environ.get("RL_SIMULATOR_API_KEY", "sim-key"),
        help="bearer token /v1 requests must carry (default $RL_SIMULATOR_API_KEY or sim-key)",
    )
    serve.add_argument("--seed", type=int, default=0, help="seed of ids and random choices")
    serve.add_argument("--user-id", default="user_sim", help="user the API key belongs to")
    serve.add_argument("--populate", type=int, default=0, metavar="N", help="create N sessions")
    serve.add_argument("--checkpoints-per-session", type=int, default=10)
    serve.add_argument("--active", type=int, default=5, help="RUNNING sessions among --populate")
    serve.add_argument(
        "--list-order",
        choices=("newest_first", "oldest_first", "unordered"),
        default="newest_first",
    )
    serve.add_argument("--start-delay", type=float, default=0.0, help="seconds CREATING lasts")
    serve.add_argument("--stop-delay", type=float, default=0.0, help="seconds STOPPING lasts")
    serve.add_argument("--operation-polls", type=int, default=1, help="polls until completion")
    serve.add_argument(
        "--scenario",
        choices=("none", "demo"),
        default="none",
        help="'demo' replays the demo sweep (train + checkpoints, capacity error, expiry) "
        "in a loop, so a UI opened beside it always has something happening",
    )
    serve.add_argument("--pace", type=float, default=5.0, help="seconds between sweep moves")
    return parser


def serve(args: argparse.Namespace) -> int:
    """Run the server in the foreground until a termination signal arrives."""
    world = SimulatedWorld(
        seed=args.seed,
        user_id=args.user_id,
        list_order=args.list_order,
        session_start_delay=args.start_delay,
        session_stop_delay=args.stop_delay,
        operation_polls=args.operation_polls,
    )
    if args.populate > 0:
        world.populate(
            args.populate,
            args.checkpoints_per_session,
            min(args.active, args.populate),
            seed=args.seed,
        )
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sim = RLSimulator(
        api_key=args.api_key, world=world, seed=args.seed, port=args.port, host=args.host
    )
    sim.start()
    try:
        print(f"RL simulator listening on {sim.base_url}", flush=True)
        if args.scenario == "demo":
            _loop_demo(world, args.pace, done)
        while not done.wait(0.2):
            pass
    finally:
        sim.stop()
    return 0


def _loop_demo(world: SimulatedWorld, pace: float, done: threading.Event) -> None:
    """Run the demo sweep again and again in a background thread until ``done``."""
    from .scenarios import DemoSweep

    def loop() -> None:
        while not done.is_set():
            sweep = DemoSweep(world, pace=pace, log=lambda m: print(m, flush=True))
            sweep.run()
            if done.wait(pace * 3):
                return

    threading.Thread(target=loop, name="demo-scenario", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rl-sessions-simulator`` and ``python -m rl_sessions_dagster.testing``."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return 2  # pragma: no cover - argparse rejects unknown commands first


if __name__ == "__main__":
    sys.exit(main())
