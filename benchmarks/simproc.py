"""The simulator in its own process, driven through its ``/_sim/*`` control API.

Benchmarks run the simulator out of process so that its serving work (and its memory) never
competes with the measured client for the GIL: the client side is what is timed. It always
binds 127.0.0.1.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

API_KEY = "sk-bench-0123456789"
HOST = "127.0.0.1"


class SimProcess:
    """A running ``rl_sessions_dagster.testing.cli serve`` process and a control client."""

    def __init__(self, proc: subprocess.Popen[str], base_url: str) -> None:
        self.proc = proc
        self.base_url = base_url
        self.api_key = API_KEY
        self._control = httpx.Client(base_url=base_url, timeout=600)

    # -- control API ------------------------------------------------------------------------
    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._control.request(method, f"/_sim{path}", json=body)
        response.raise_for_status()
        return response.json()

    def api_requests(self) -> int:
        """Requests served on ``/v1`` so far (control calls are not counted)."""
        by_route = self.control("GET", "/stats")["requests"]["by_route"]
        return sum(n for route, n in by_route.items() if route.split(" ", 1)[-1].startswith("/v1"))

    def reset_requests(self) -> None:
        self.control("POST", "/requests/reset")

    def session_ids(self, status: str) -> list[str]:
        """Ids of sessions in ``status`` (short name), read with the bearer key (uncounted:
        callers reset or diff the counters around measured work)."""
        out: list[str] = []
        after: str | None = None
        headers = {"Authorization": f"Bearer {self.api_key}"}
        while True:
            params: dict[str, Any] = {"limit": 100, "status": f"TRAINING_SESSION_STATUS_{status}"}
            if after:
                params["after"] = after
            page = self._control.get("/v1/rl/training-sessions", params=params, headers=headers)
            page.raise_for_status()
            doc = page.json()
            out += [s["id"] for s in doc.get("data") or []]
            meta = doc.get("meta") or {}
            after = meta.get("next_cursor")
            if not meta.get("has_more") or not after:
                return out

    def close(self) -> None:
        self._control.close()


def _read_url(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("RL simulator listening on "):
                return line.rsplit(" ", 1)[-1].strip()
        if proc.poll() is not None:
            break
    raise RuntimeError(f"the simulator did not start within {timeout} s (rc={proc.poll()})")


def stop_child(proc: subprocess.Popen[Any]) -> None:
    """Stop a benchmark's child server: SIGTERM, then kill after 10 s; close its stdout."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()


@contextmanager
def simulator(
    n_sessions: int,
    *,
    active: int = 50,
    checkpoints_per_session: int = 10,
    list_order: str = "newest_first",
    seed: int = 11,
) -> Iterator[SimProcess]:
    """Start a populated simulator on 127.0.0.1; stop it (by its pid) on exit."""
    cmd = [
        sys.executable, "-m", "rl_sessions_dagster.testing.cli", "serve",
        "--host", HOST, "--port", "0", "--api-key", API_KEY, "--seed", str(seed),
        "--populate", str(n_sessions), "--active", str(active),
        "--checkpoints-per-session", str(checkpoints_per_session),
        "--list-order", list_order,
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sim: SimProcess | None = None
    try:
        url = _read_url(proc, timeout=300)
        if not url.startswith(f"http://{HOST}:"):
            raise RuntimeError(f"the simulator is not on {HOST}: {url}")
        sim = SimProcess(proc, url)
        yield sim
    finally:
        if sim is not None:
            sim.close()
        stop_child(proc)
