"""Row 3: client paging throughput over every page of a list (page size 100).

Two payloads, each served by its own process: the simulator's populated world (10 inference
checkpoints and 1 training checkpoint per session, the issue #20 case) and the payload corpus
(``corpus_server.py``: the sessions of ``tests/api/fixtures``, 0-2 checkpoints each, every
shape the client is tested on). Readers: this project's ``RLSessionsClient.list_sessions``
(typed ``TrainingSession`` models), raw ``httpx`` + ``json.loads`` (dicts, the floor), and the
official ``together`` SDK 3.1.1 (its own models, in its own venv, see ``sdk_python``); ours and
raw also in a process that imported Dagster (a code server's heap, where the collector's full
passes cost more), and ours reading every inference checkpoint's registration (the lists are
built into models on first use, see ``api/pages.py``: this row pays for all of them). For
scale, our client also reads each session as a model with nothing typed but ``id``: the least
any reader of typed models per session pays, whatever its validation.

Every pass runs in a fresh interpreter after an untimed warm-up pass, readers interleaved, so
none inherits another's heap. A parse-only measurement (same page bytes, no HTTP) splits HTTP
from decoding. ``python -m benchmarks.paging --sessions N --repeats R`` prints the section.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import timeit
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from rl_sessions_dagster.api import Page, RLSessionsClient, TrainingSession

from .corpus_server import corpus_server
from .simproc import API_KEY, simulator

HERE = Path(__file__).resolve().parent
SDK_VENV = HERE / ".venv-sdk"
SDK_VERSION = "3.1.1"


def sdk_python(create: bool, log: Any) -> tuple[Path | None, str]:
    """The SDK venv's interpreter, created with uv if asked; (None, why) when unavailable.

    The SDK is not a project dependency: a ``bench`` dependency group resolves only by
    downgrading rich (15 → 14) and filelock (4 → 3) in the shared lock, since together 3.1.1
    pins ``rich<15`` and ``filelock<4``; a throwaway venv keeps the lock untouched. Dagster (this
    process's version) goes into it too, for the SDK's "imported dagster" reader.
    """
    import dagster
    import pydantic

    py = SDK_VENV / "bin" / "python"
    check = (
        f"import together, dagster; assert together.__version__ == '{SDK_VERSION}'; "
        f"assert dagster.__version__ == '{dagster.__version__}'"
    )
    if py.exists() and subprocess.run([str(py), "-c", check], capture_output=True).returncode == 0:
        return py, ""
    if not create:
        return None, f"skipped: {SDK_VENV.name} not present (a full run creates it)"
    log(f"  creating {SDK_VENV} (together=={SDK_VERSION}, dagster=={dagster.__version__}) with uv")
    try:
        if not py.exists():
            subprocess.run(
                ["uv", "venv", "-q", "--python", sys.executable, str(SDK_VENV)],
                check=True, capture_output=True, timeout=300,
            )  # fmt: skip
        subprocess.run(
            [
                "uv", "pip", "install", "-q", "--python", str(py), f"together=={SDK_VERSION}",
                f"httpx=={httpx.__version__}", f"pydantic=={pydantic.__version__}",
                f"dagster=={dagster.__version__}",
            ],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"skipped: could not create the SDK venv ({exc})"
    return py, ""


class _IdOnly(BaseModel):
    """A session with nothing typed but ``id``; every other field kept as parsed JSON."""

    model_config = ConfigDict(extra="allow")

    id: str


def _ours(client: RLSessionsClient, touch: bool = False, floor: bool = False) -> int:
    count = 0
    sessions = (
        # the client's own paging (private: no public call takes another item model)
        client._iterate("/v1/rl/training-sessions", Page[_IdOnly], {}, page_size=100, deadline=None)
        if floor
        else client.list_sessions(page_size=100)
    )
    for session in sessions:
        count += 1
        if touch:
            for checkpoint in session.inference_checkpoints:
                _ = checkpoint.is_registered
    return count


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


def child(base_url: str, api_key: str, mode: str) -> dict[str, Any]:
    """One warm-up pass, then one timed pass, in a fresh interpreter."""
    if mode.endswith("_dagster"):
        import dagster  # noqa: F401 - a code server's heap, as a sensor tick sees it
    if mode.startswith("raw"):
        headers = {"Authorization": f"Bearer {api_key}"}
        with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
            _raw(http)
            started = timeit.default_timer()
            count = _raw(http)
            return {"count": count, "seconds": timeit.default_timer() - started}
    touch, floor = mode == "ours_touch", mode == "ours_floor"
    with RLSessionsClient(api_key, base_url=base_url) as client:
        _ours(client, touch, floor)
        started = timeit.default_timer()
        count = _ours(client, touch, floor)
        return {"count": count, "seconds": timeit.default_timer() - started}


PAYLOADS = {
    "sim10": "simulator world: 10 inference + 1 training checkpoints per session",
    "corpus": "payload corpus (tests/api/fixtures sessions, 0-2 checkpoints each)",
}
READERS = {
    "ours": "ours: `RLSessionsClient.list_sessions` (typed models)",
    "raw": "raw `httpx` + `json.loads` (dicts)",
    "sdk": "official `together` SDK",
    "sdk_dagster": "official `together` SDK, in a process that imported dagster",
    "ours_dagster": "ours, in a process that imported dagster (as in a code server)",
    "raw_dagster": "raw `httpx` + `json.loads`, in a process that imported dagster",
    "ours_touch": "ours, reading every inference checkpoint's registration",
    "ours_floor": "for scale: our client, each session a model with only `id` typed",
}


@contextmanager
def _served(payload: str, n_sessions: int) -> Iterator[str]:
    if payload == "sim10":
        with simulator(n_sessions, checkpoints_per_session=10) as sim:
            yield sim.base_url
    else:
        with corpus_server(n_sessions) as url:
            yield url


def run_paging(n_sessions: int, *, repeats: int, create_sdk_venv: bool, log: Any) -> dict[str, Any]:
    """Per payload, each pass of each reader runs in a fresh interpreter (one untimed warm-up
    pass first), readers interleaved pass by pass, so no reader inherits another's heap."""
    result: dict[str, Any] = {"n_sessions": n_sessions, "repeats": repeats, "payloads": {}}
    py, why = sdk_python(create_sdk_venv, log)
    readers = [k for k in READERS if not k.startswith("sdk") or py is not None]
    if py is None:
        result["sdk_skipped"] = why
    for payload in PAYLOADS:
        log(f"  paging {payload}: {n_sessions} sessions, {repeats} passes per reader")
        runs: dict[str, list[float]] = {k: [] for k in readers}
        with _served(payload, n_sessions) as base_url:
            for i in range(repeats):
                shift = i % len(readers)
                for key in readers[shift:] + readers[:shift]:
                    runs[key].append(n_sessions / _pass(key, py, base_url, n_sessions, result))
            if payload == "sim10":
                _parse_only(base_url, repeats, result)
        result["payloads"][payload] = runs
    return result


def _pass(
    key: str, py: Path | None, base_url: str, n_sessions: int, result: dict[str, Any]
) -> float:
    if key.startswith("sdk"):
        assert py is not None
        cmd = [str(py), str(HERE / "sdk_paging.py"), base_url, API_KEY, "1", "100"]
        cmd += ["dagster"] if key == "sdk_dagster" else []
    else:
        cmd = [sys.executable, "-m", "benchmarks.paging", base_url, API_KEY, key]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=1800, cwd=HERE.parent,
        env={**os.environ, "TOGETHER_API_KEY": API_KEY},
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"paging child {key} failed: {proc.stderr.strip()[-800:]}")
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    if key.startswith("sdk"):
        result["sdk_version"] = doc["version"]
        doc = {"count": doc["counts"][0], "seconds": doc["times"][0]}
    if doc["count"] != n_sessions:
        raise RuntimeError(f"{key} counted {doc['count']} sessions, not {n_sessions}")
    return float(doc["seconds"])


def _parse_only(base_url: str, repeats: int, result: dict[str, Any]) -> None:
    """The first ten pages of the simulator world, no HTTP, in this process, readers
    interleaved page by page. The median is what a pass pays; the minimum (a page parsed
    again and again, hot caches, no collection) flatters the reader that allocates most, so
    it is kept beside the median, not instead of it."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    pages: list[bytes] = []
    after: str | None = None
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        while len(pages) < 10:
            params: dict[str, Any] = {"limit": 100, **({"after": after} if after else {})}
            pages.append(http.get("/v1/rl/training-sessions", params=params).content)
            after = (json.loads(pages[-1]).get("meta") or {}).get("next_cursor")
            if not after:
                break
    model = Page[TrainingSession]

    def touched(page: bytes) -> None:
        for session in model.model_validate_json(page).data:
            for checkpoint in session.inference_checkpoints:
                _ = checkpoint.is_registered

    readers = {"json": json.loads, "ours": model.model_validate_json, "ours_touch": touched}
    times: dict[str, list[float]] = {key: [] for key in readers}
    for _ in range(max(10, 2 * repeats)):
        for page in pages:
            for key, read in readers.items():
                started = timeit.default_timer()
                read(page)
                times[key].append(timeit.default_timer() - started)
    result["parse_page_sessions"] = len(json.loads(pages[0])["data"])
    result["parse_pages"] = len(pages)
    for key, values in times.items():
        result[f"parse_{key}_ms"] = 1000 * statistics.median(values)
        result[f"parse_{key}_min_ms"] = 1000 * min(values)


def main(argv: list[str] | None = None) -> None:
    import argparse

    from .report import paging_section

    p = argparse.ArgumentParser(prog="python -m benchmarks.paging")
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-sdk", action="store_true", help="do not create the SDK venv")
    args = p.parse_args(argv)
    result = run_paging(
        args.sessions,
        repeats=args.repeats,
        create_sdk_venv=not args.no_sdk,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    print(json.dumps(result), file=sys.stderr)
    print("\n".join(paging_section(result)))


if __name__ == "__main__":
    if len(sys.argv) == 4 and not sys.argv[1].startswith("-"):
        print(json.dumps(child(sys.argv[1], sys.argv[2], sys.argv[3])))
    else:
        main()
