"""One command that measures the integration against naive sensors, the raw HTTP floor and the
official SDK, all on the local simulator (127.0.0.1), and writes ``BENCHMARKS.md``.

    uv run --frozen python -m benchmarks.run [--quick] [--sizes 1000,10000,100000]
        [--repeats N] [--budget SECONDS] [--daemon] [--out BENCHMARKS.md]

``--quick``: 1,000 sessions, 2 repeats (one paging pass), no SDK venv creation (the SDK row is measured only if
``benchmarks/.venv-sdk`` already exists), no daemon; under a minute. The generated part of the
output file sits between two markers; text outside them (hand-written analysis) is kept.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from .machine import describe

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- benchmarks.run: generated, do not edit by hand -->"
END = "<!-- benchmarks.run: end of generated part -->"
DEFAULT_SIZES = "1000,10000,100000"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    p.add_argument("--quick", action="store_true", help="1k sessions, 2 repeats, < 60 s")
    p.add_argument("--sizes", default=None, help=f"world sizes (default {DEFAULT_SIZES})")
    p.add_argument("--repeats", type=int, default=None, help="measured ticks / passes (20)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of measured ticks per sensor and case before it stops ticking (60)",
    )
    p.add_argument("--daemon", action="store_true", help="also measure the real daemon")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="Markdown output")
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = args.sizes or "1000"
        args.repeats = args.repeats or 2
        args.budget = args.budget or 30.0
        args.daemon = False
    args.sizes = [int(s) for s in (args.sizes or DEFAULT_SIZES).split(",") if s.strip()]
    args.repeats = args.repeats or 20
    args.budget = args.budget or 60.0
    return args


def _quiet() -> None:
    """Warnings Dagster prints for every definitions object the benchmark builds."""
    warnings.filterwarnings("ignore", message="Starting in dagster 1.11, get_sensor_def")
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def command_line(args: argparse.Namespace) -> str:
    cmd = "uv run --frozen python -m benchmarks.run"
    if args.quick:
        return cmd + " --quick"
    cmd += f" --sizes {','.join(str(s) for s in args.sizes)} --repeats {args.repeats}"
    if args.budget != 60.0:
        cmd += f" --budget {args.budget:g}"
    return cmd + (" --daemon" if args.daemon else "")


def write_markdown(path: Path, body: str) -> None:
    generated = f"{BEGIN}\n{body.rstrip()}\n{END}\n"
    if path.exists():
        text = path.read_text()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
            path.write_text(head + generated + tail.lstrip("\n"))
            return
    path.write_text("# Benchmarks\n\n" + generated)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _args(argv)
    _quiet()
    from .memory import run_memory
    from .paging import run_paging
    from .report import render
    from .startup import run_startup
    from .ticks import run_ticks

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    results: dict[str, Any] = {}
    log(f"sensor ticks: sizes {args.sizes}, {args.repeats} rounds, {args.budget:g} s per sensor")
    results["ticks"] = run_ticks(
        args.sizes, repeats=args.repeats, budget_s=args.budget, seed=args.seed, log=log
    )
    paging_n = 10_000 if 10_000 in args.sizes else max(args.sizes)
    log(f"paging: {paging_n} sessions")
    results["paging"] = run_paging(
        paging_n,
        repeats=1 if args.quick else max(3, min(args.repeats, 7)),
        create_sdk_venv=not args.quick,
        log=log,
    )
    log(f"memory: {max(args.sizes)} sessions")
    results["memory"] = run_memory(max(args.sizes), log)
    log("imports and definitions load")
    results["startup"] = run_startup(2 if args.quick else 5)
    if args.daemon:
        from .daemon import run_daemon

        log("daemon latency")
        results["daemon"] = run_daemon(5, log)
    else:
        results["daemon_skipped"] = "pass --daemon (not in --quick)"
    elapsed = time.perf_counter() - started

    machine = describe(results["paging"].get("sdk_version"))
    body = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M %Z')} in {elapsed:.0f} s with "
        f"`{command_line(args)}`.",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".",
        "",
        render(results),
    ]
    text = "\n".join(body)
    print(text)
    write_markdown(Path(args.out), text)
    log(f"wrote {args.out} ({elapsed:.0f} s)")
    results["elapsed_s"] = elapsed
    results["markdown"] = text
    return results


if __name__ == "__main__":
    main()
