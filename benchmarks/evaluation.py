"""Evaluation throughput: the built-in runner against a sequential loop like the example's.

    uv run --frozen python -m benchmarks.evaluation [--items 500] [--delay 0.2]
        [--concurrency 16] [--fault-rate 0.05] [--sequential-items N] [--write]

The simulator runs in its own process (127.0.0.1) and answers every chat completion after
``--delay`` seconds (a fault rule with ``delay_s`` only: the wait holds no lock, so calls
overlap as they would on a real endpoint). Three measurements, each with a fresh client:

* **sequential**: one call after another through ``RLSessionsClient.chat_completion``, the
  way ``example_repo/evaluation.py`` asks its questions; ideal = items x delay.
* **runner**: :func:`rl_sessions_dagster.evaluation.run_evaluation` at ``--concurrency``;
  ideal = items x delay / concurrency (target: within 1.3x).
* **faults**: the same runner with ``--fault-rate`` of the calls answered 503 (after the same
  delay) and retried by the client's default policy; every item must still get its answer.

``--write`` puts the table between this benchmark's markers in BENCHMARKS.md (the rest of the
file is left alone). Numbers are never asserted by tests (the smoke test runs it tiny).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.api.checkpoints import deployment_target
from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.evaluation.dataset import load_dataset
from rl_sessions_dagster.evaluation.graders import resolve_grader
from rl_sessions_dagster.evaluation.runner import run_evaluation

from .machine import describe
from .simproc import SimProcess, simulator

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- benchmarks.evaluation: generated, do not edit by hand -->"
END = "<!-- benchmarks.evaluation: end of generated part -->"
CHAT = "POST /v1/chat/completions"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.evaluation", description=__doc__)
    p.add_argument("--items", type=int, default=500)
    p.add_argument("--delay", type=float, default=0.2, help="seconds per chat call")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--fault-rate", type=float, default=0.05)
    p.add_argument(
        "--sequential-items", type=int, default=None, help="items for the sequential loop"
    )
    p.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    return p.parse_args(argv)


def _model(sim: SimProcess) -> str:
    session = sim.control("POST", "/sessions", {"display_name": "bench-eval"})
    sim.control("POST", f"/sessions/{session['id']}/steps", {"n": 40})
    checkpoint = sim.control("POST", f"/sessions/{session['id']}/checkpoints", {})
    with RLSessionsClient(sim.api_key, base_url=sim.base_url) as client:
        model = deployment_target(client.get_checkpoint(checkpoint["id"])).inference_model
    assert model
    return model


def _faults(sim: SimProcess, delay: float, rate: float) -> None:
    sim.control("DELETE", "/faults")
    if rate > 0:
        sim.control("POST", "/faults", {"pattern": CHAT, "status": 503, "rate": rate,
                                        "delay_s": delay})  # fmt: skip
    sim.control("POST", "/faults", {"pattern": CHAT, "delay_s": delay})


def _chat_faults(sim: SimProcess) -> int:
    counts = sim.control("GET", "/stats")["requests"].get("faults", {})
    return sum(n for kind, n in counts.items() if kind.startswith("status"))


def run(args: argparse.Namespace, log: Any = print) -> dict[str, Any]:
    items = [{"a": i % 97 + 2, "b": i // 97 + 3, "expected": i % 97 + 2 + i // 97 + 3}
             for i in range(args.items)]  # fmt: skip
    dataset = load_dataset(items=items, prompt_template="What is {a} + {b}?")
    graders = [resolve_grader("numeric")]
    seq_n = min(args.sequential_items or args.items, args.items)
    out: dict[str, Any] = {"args": vars(args), "machine": describe()}
    with simulator(1, active=1, checkpoints_per_session=1) as sim:
        model = _model(sim)
        _faults(sim, args.delay, 0.0)

        log(f"sequential loop: {seq_n} calls at {args.delay:g} s")
        with RLSessionsClient(sim.api_key, base_url=sim.base_url) as client:
            started = time.perf_counter()
            correct = 0
            for item in dataset.items[:seq_n]:
                reply = client.chat_completion(model, list(item.messages), temperature=0,
                                               max_tokens=16)  # fmt: skip
                correct += graders[0].grade(reply.text, item).passed
            out["sequential"] = {"calls": seq_n, "wall": time.perf_counter() - started,
                                 "ideal": seq_n * args.delay}  # fmt: skip

        settings = EvaluationSpec(items=items, concurrency=args.concurrency, max_tokens=16)
        for name, rate in (("runner", 0.0), ("faults", args.fault_rate)):
            _faults(sim, args.delay, rate)
            sim.reset_requests()
            log(f"{name}: {args.items} items, concurrency {args.concurrency}, faults {rate:.0%}")
            with RLSessionsClient(sim.api_key, base_url=sim.base_url) as client:
                result = run_evaluation(client, model, dataset, graders, settings)
            out[name] = {
                "calls": result.calls,
                "answered": result.passed + result.failed + result.unreadable,
                "wall": result.wall_seconds,
                "ideal": args.items * args.delay / args.concurrency,
                "p50": result.latency_p50_s,
                "p95": result.latency_p95_s,
                "requests": sim.api_requests(),
                "faults": _chat_faults(sim),
                "score": result.score,
            }
    return out


def render(res: dict[str, Any]) -> str:
    a = res["args"]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `uv run --frozen "
        f"python -m benchmarks.evaluation --items {a['items']} --delay {a['delay']:g} "
        f"--concurrency {a['concurrency']} --fault-rate {a['fault_rate']:g}`.",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in res["machine"].items()) + ".",
        "",
        "| run | calls | answered | HTTP requests | injected 503s | wall s | ideal s "
        "| wall / ideal | call p50 ms | call p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    seq = res["sequential"]
    lines.append(
        f"| sequential loop (like example_repo/evaluation.py) | {seq['calls']} | {seq['calls']} "
        f"| {seq['calls']} | 0 | {seq['wall']:.2f} | {seq['ideal']:.2f} "
        f"| {seq['wall'] / seq['ideal']:.2f}x | | |"
    )
    for name, label in (("runner", "run_evaluation"), ("faults", "run_evaluation, faults")):
        r = res[name]
        label += f", concurrency {a['concurrency']}"
        if name == "faults":
            label += f", {a['fault_rate']:.0%} 503s"
        lines.append(
            f"| {label} | {r['calls']} | {r['answered']} | {r['requests']} | {r['faults']} "
            f"| {r['wall']:.2f} | {r['ideal']:.2f} | {r['wall'] / r['ideal']:.2f}x "
            f"| {r['p50'] * 1000:.0f} | {r['p95'] * 1000:.0f} |"
        )
    return "\n".join(lines) + "\n"


def write(path: Path, body: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{BEGIN}\n{body.rstrip()}\n{END}\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        path.write_text(head + block + rest.split(END, 1)[1].lstrip("\n"))
    else:
        path.write_text(text.rstrip("\n") + "\n\n" + block)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _args(argv)
    res = run(args, log=lambda m: print(m, file=sys.stderr, flush=True))
    body = render(res)
    print(body)
    if args.write:
        write(Path(args.out), body)
    return res


if __name__ == "__main__":
    main()
