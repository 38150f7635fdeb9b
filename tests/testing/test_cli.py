"""The CLI: ``serve`` prints its URL, answers, and exits 0 on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from rl_sessions_dagster.testing import SimulatedWorld

LINE = re.compile(r"^RL simulator listening on (http://127\.0\.0\.1:\d+)$")


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rl_sessions_dagster.testing.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    match = LINE.match(line)
    if match is None:
        proc.kill()
        pytest.fail(
            f"unexpected first line {line!r}; stderr: {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, match.group(1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_and_exits_zero_on_signal(sig: signal.Signals) -> None:
    proc, url = start("--api-key", "cli-key", "--seed", "4", "--populate", "40")
    try:
        r = httpx.get(
            f"{url}/v1/rl/training-sessions",
            params={"limit": 100},
            headers={"Authorization": "Bearer cli-key"},
        )
        assert r.status_code == 200
        same_seed = SimulatedWorld(seed=4)
        same_seed.populate(40, 10, 5, seed=4)
        assert {s["id"] for s in r.json()["data"]} == set(same_seed.session_ids())
        assert httpx.get(f"{url}/v1/rl/training-sessions").status_code == 401
        assert httpx.get(f"{url}/_sim/stats").json()["world"]["sessions"] == 40
        os.kill(proc.pid, sig)
        assert proc.wait(timeout=60) == 0  # a ceiling: exits in well under a second
        assert proc.stdout is not None and proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_module_entry_point_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rl_sessions_dagster.testing", "serve", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "--populate" in out.stdout and "--api-key" in out.stdout
