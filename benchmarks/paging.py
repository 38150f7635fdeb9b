"""Row 3: client paging throughput over every page of a world (page size 100).

Readers of the same simulator (own process): this project's ``RLSessionsClient.list_sessions``
(typed ``TrainingSession`` models), raw ``httpx`` + ``json.loads`` (dicts, the floor), and the
official ``together`` SDK 3.1.1 (its own models, in its own venv, see ``sdk_python``). Every
pass runs in a fresh interpreter after an untimed warm-up pass, readers interleaved, so none
inherits another's heap: the garbage collector's cost grows with the live heap, and a process
that imported Dagster pays more per page (measured as extra rows). The ``*_gc`` rows pause the
collector while a page decodes, in the benchmark child only, to show what collection costs:
the library itself never touches the process-wide collector (a guest in a code server that
runs other threads). A parse-only measurement (same page bytes, no HTTP) splits HTTP from
decoding.
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


def _pause_gc_while_decoding() -> None:
    """A measurement, in this child process only: no garbage collection while a response is
    decoded, to show the collector's share of the cost. Not something a library may do."""
    import gc

    from rl_sessions_dagster.api._http import BaseClient

    decode = BaseClient._decode

    def _decode(self: Any, response: Any, model: Any) -> Any:
        if not gc.isenabled():
            return decode(self, response, model)
        gc.disable()
        try:
            return decode(self, response, model)
        finally:
            gc.enable()

    BaseClient._decode = _decode  # type: ignore[method-assign]


def child(base_url: str, api_key: str, mode: str) -> dict[str, Any]:
    """One warm-up pass, then one timed pass, in a fresh interpreter."""
    if "dagster" in mode:
        import dagster  # noqa: F401 - a code server's heap, as a sensor tick sees it
    if mode.endswith("gc"):
        _pause_gc_while_decoding()
    if mode == "raw":
        headers = {"Authorization": f"Bearer {api_key}"}
        with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
            _raw(http)
            started = timeit.default_timer()
            count = _raw(http)
            return {"count": count, "seconds": timeit.default_timer() - started}
    with RLSessionsClient(api_key, base_url=base_url) as client:
        _ours(client)
        started = timeit.default_timer()
        count = _ours(client)
        return {"count": count, "seconds": timeit.default_timer() - started}


READERS = {
    "ours": "ours: `RLSessionsClient.list_sessions` (typed models)",
    "raw": "raw `httpx` + `json.loads` (dicts)",
    "sdk": "official `together` SDK",
    "ours_gc": "(measurement only) ours with GC paused while a page is decoded",
    "ours_dagster": "ours, in a process that imported dagster (as in a code server)",
    "ours_dagster_gc": "(measurement only) ours, imported dagster, GC paused while decoding",
}


def run_paging(n_sessions: int, *, repeats: int, create_sdk_venv: bool, log: Any) -> dict[str, Any]:
    """Each pass of each reader runs in a fresh interpreter (one untimed warm-up pass first),
    readers interleaved pass by pass, so no reader inherits another's heap."""
    result: dict[str, Any] = {"n_sessions": n_sessions, "repeats": repeats}
    py, why = sdk_python(create_sdk_venv, log)
    readers = [k for k in READERS if k != "sdk" or py is not None]
    if py is None:
        result["sdk_skipped"] = why
    runs: dict[str, list[float]] = {k: [] for k in readers}
    with simulator(n_sessions) as sim:
        for i in range(repeats):
            shift = i % len(readers)
            for key in readers[shift:] + readers[:shift]:
                if key == "sdk":
                    assert py is not None
                    cmd = [str(py), str(HERE / "sdk_paging.py"), sim.base_url, sim.api_key, "1"]
                else:
                    cmd = [sys.executable, "-m", "benchmarks.paging", sim.base_url, sim.api_key]
                    cmd.append(key)
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=1800,
                    env={**os.environ, "TOGETHER_API_KEY": sim.api_key},
                )  # fmt: skip
                if proc.returncode != 0:
                    raise RuntimeError(f"paging child {key} failed: {proc.stderr.strip()[-800:]}")
                doc = json.loads(proc.stdout.strip().splitlines()[-1])
                if key == "sdk":
                    result["sdk_version"] = doc["version"]
                    doc = {"count": doc["counts"][0], "seconds": doc["times"][0]}
                if doc["count"] != n_sessions:
                    raise RuntimeError(f"{key} counted {doc['count']} sessions, not {n_sessions}")
                runs[key].append(n_sessions / doc["seconds"])
        headers = {"Authorization": f"Bearer {sim.api_key}"}
        with httpx.Client(base_url=sim.base_url, headers=headers, timeout=60) as http:
            page = http.get("/v1/rl/training-sessions", params={"limit": 100}).content
    result.update(runs)
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


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], sys.argv[2], sys.argv[3])))
