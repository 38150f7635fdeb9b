"""Row 3: client paging throughput over every page of a world (page size 100).

Three readers of the same simulator (own process, JSON caches warmed by one untimed pass of
each reader): this project's ``RLSessionsClient.list_sessions`` (typed ``TrainingSession``
models), raw ``httpx`` + ``json.loads`` (dicts, the floor), and the official ``together`` SDK
3.1.1 (its own models). Ours and raw alternate pass by pass; the SDK runs in its own venv as a
subprocess (see ``sdk_venv``). A parse-only measurement (same page bytes, no HTTP) splits HTTP
from decoding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import timeit
from pathlib import Path
from typing import Any

import httpx

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.api.models import Page, TrainingSession

from .simproc import simulator

HERE = Path(__file__).resolve().parent
SDK_VENV = HERE / ".venv-sdk"
SDK_VERSION = "3.1.1"


def sdk_python(create: bool, log: Any) -> tuple[Path | None, str]:
    """The SDK venv's interpreter, created with uv if asked; (None, why) when unavailable.

    The SDK is not a project dependency: a ``bench`` dependency group resolves only by
    downgrading rich (15 → 14) and filelock (4 → 3) in the shared lock, since together 3.1.1
    pins ``rich<15`` and ``filelock<4``; a throwaway venv keeps the lock untouched.
    """
    py = SDK_VENV / "bin" / "python"
    if py.exists():
        check = subprocess.run(
            [str(py), "-c", f"import together; assert together.__version__ == '{SDK_VERSION}'"],
            capture_output=True,
        )
        if check.returncode == 0:
            return py, ""
    if not create:
        return None, f"skipped: {SDK_VENV.name} not present (a full run creates it)"
    import pydantic

    log(f"  creating {SDK_VENV} (together=={SDK_VERSION}) with uv")
    try:
        subprocess.run(
            ["uv", "venv", "-q", "--python", sys.executable, str(SDK_VENV)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        subprocess.run(
            [
                "uv", "pip", "install", "-q", "--python", str(py), f"together=={SDK_VERSION}",
                f"httpx=={httpx.__version__}", f"pydantic=={pydantic.__version__}",
            ],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"skipped: could not create the SDK venv ({exc})"
    return py, ""


def _ours(client: RLSessionsClient) -> int:
    return sum(1 for _ in client.list_sessions(page_size=100))


def _raw(http: httpx.Client) -> int:
    count, after = 0, None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if after:
            params["after"] = after
        response = http.get("/v1/rl/training-sessions", params=params)
        response.raise_for_status()
        doc = json.loads(response.content)
        count += len(doc.get("data") or [])
        meta = doc.get("meta") or {}
        after = meta.get("next_cursor")
        if not after or meta.get("has_more") is False:
            return count


def _timed(fn: Any, arg: Any) -> tuple[float, int]:
    started = timeit.default_timer()
    n = fn(arg)
    return timeit.default_timer() - started, n


def run_paging(n_sessions: int, *, repeats: int, create_sdk_venv: bool, log: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"n_sessions": n_sessions, "repeats": repeats}
    py, why = sdk_python(create_sdk_venv, log)
    with simulator(n_sessions) as sim:
        headers = {"Authorization": f"Bearer {sim.api_key}"}
        with (
            RLSessionsClient(sim.api_key, base_url=sim.base_url) as client,
            httpx.Client(base_url=sim.base_url, headers=headers, timeout=60) as http,
        ):
            _ours(client)
            _raw(http)
            ours, raw = [], []
            for i in range(repeats):
                pair = [("ours", _ours, client, ours), ("raw", _raw, http, raw)]
                for _, fn, arg, out in pair if i % 2 == 0 else pair[::-1]:
                    seconds, n = _timed(fn, arg)
                    if n != n_sessions:
                        raise RuntimeError(f"paging counted {n} sessions, expected {n_sessions}")
                    out.append(n / seconds)
            page = http.get("/v1/rl/training-sessions", params={"limit": 100}).content
        result["ours"], result["raw"] = ours, raw
        if py is not None:
            proc = subprocess.run(
                [str(py), str(HERE / "sdk_paging.py"), sim.base_url, sim.api_key, str(repeats)],
                capture_output=True, text=True, timeout=1800,
                env={**os.environ, "TOGETHER_API_KEY": sim.api_key},
            )  # fmt: skip
            if proc.returncode == 0:
                doc = json.loads(proc.stdout.strip().splitlines()[-1])
                if any(c != n_sessions for c in doc["counts"]):
                    raise RuntimeError(f"the SDK counted {doc['counts']}, not {n_sessions}")
                result["sdk"] = [n_sessions / t for t in doc["times"]]
                result["sdk_version"] = doc["version"]
            else:
                result["sdk_skipped"] = f"SDK run failed: {proc.stderr.strip()[-300:]}"
        else:
            result["sdk_skipped"] = why
    # Parse only: the same 100-session page, no HTTP.
    model = Page[TrainingSession]
    n_page = len(json.loads(page)["data"])
    result["parse_page_sessions"] = n_page
    result["parse_json_ms"] = 1000 * min(
        timeit.repeat(lambda: json.loads(page), number=1, repeat=max(20, 5 * repeats))
    )
    result["parse_ours_ms"] = 1000 * min(
        timeit.repeat(
            lambda: model.model_validate_json(page), number=1, repeat=max(20, 5 * repeats)
        )
    )
    return result
