"""Row 4: peak memory while iterating every session with ``list_sessions``.

The simulator serves from its own process; the iteration runs in a fresh child process (this
module's ``__main__``), so neither the simulator's memory nor the benchmark's is counted. Two
measures, in separate children so neither disturbs the other:

* ``rss``: the kernel's peak RSS of the child (``VmHWM`` in ``/proc/self/status``), reset
  through ``/proc/self/clear_refs`` just before the first page is requested (after imports and
  client construction), minus the RSS at that moment. (``getrusage().ru_maxrss`` cannot be
  reset and also remembers the import-time peak, so it is not used.)
* ``tracemalloc``: peak of Python allocations traced from just before the first page.

For scale, a third child holds every session (``list(client.list_sessions())``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from .simproc import simulator

MB = 1024 * 1024


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # CLEAR_REFS_MM_HIWATER_RSS: peak RSS := current RSS


def _rss_peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(base_url: str, api_key: str, mode: str) -> dict[str, Any]:
    from rl_sessions_dagster.api import RLSessionsClient

    with RLSessionsClient(api_key, base_url=base_url) as client:
        sessions = client.list_sessions(page_size=100)
        if mode == "tracemalloc":
            import tracemalloc

            tracemalloc.start()
            count = sum(1 for _ in sessions)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            return {"count": count, "peak_above_start": peak}
        _reset_peak()
        start = _rss_now()
        if mode == "materialize":
            held = list(sessions)
            count = len(held)
        else:
            count = sum(1 for _ in sessions)
        return {"count": count, "peak_above_start": _rss_peak() - start, "start_rss": start}


def run_memory(n_sessions: int, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"n_sessions": n_sessions}
    with simulator(n_sessions) as sim:
        for mode in ("rss", "tracemalloc", "materialize"):
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.memory", sim.base_url, sim.api_key, mode],
                capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"memory child ({mode}) failed: {proc.stderr[-500:]}")
            doc = json.loads(proc.stdout.strip().splitlines()[-1])
            if doc["count"] != n_sessions:
                raise RuntimeError(f"memory child counted {doc['count']}, not {n_sessions}")
            out[mode] = doc["peak_above_start"] / MB
            log(f"  memory {mode}: {out[mode]:.1f} MB above start")
    return out


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], sys.argv[2], sys.argv[3])))
