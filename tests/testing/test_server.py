"""Server lifecycle: start/stop, ports, threads, keep-alive shutdown."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.daemon import wait_for


def serving_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rl-simulator")]


def test_base_url_and_headers() -> None:
    with RLSimulator(api_key="k1", seed=3) as sim:
        assert sim.base_url == f"http://127.0.0.1:{sim.port}" and not sim.base_url.endswith("/v1")
        assert sim.headers == {"Authorization": "Bearer k1"} and sim.running
        assert httpx.get(f"{sim.base_url}/_sim/health").json()["status"] == "ok"
    assert not sim.running
    with pytest.raises(RuntimeError):
        _ = sim.port


def test_stop_is_fast_and_closes_idle_keep_alive_connections() -> None:
    sim = RLSimulator().start()
    port = sim.port
    clients = [httpx.Client(base_url=sim.base_url, headers=sim.headers) for _ in range(3)]
    for c in clients:
        c.get("/v1/rl/supported-models").raise_for_status()  # leaves an idle keep-alive socket
    start = time.perf_counter()
    sim.stop()
    # Far under the 300 s an idle keep-alive connection would hold its handler (and far above
    # a loaded machine's stop); milliseconds typically.
    assert time.perf_counter() - start < 20.0
    # A ceiling: the handler threads end as the sockets close.
    wait_for(lambda: not serving_threads(), 30, "the handler threads to end", interval=0.01)
    assert serving_threads() == []
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    for c in clients:
        c.close()
    sim.stop()  # idempotent


def test_restart_and_fixed_port() -> None:
    sim = RLSimulator().start()
    port = sim.port
    sim.stop()
    again = RLSimulator(port=port).start()
    try:
        assert again.port == port
        assert httpx.get(f"{again.base_url}/_sim/health").status_code == 200
        assert again.start() is again
    finally:
        again.stop()


def test_many_concurrent_clients() -> None:
    with RLSimulator() as sim:
        sim.world.create_session()
        errors: list[BaseException] = []

        def work() -> None:
            try:
                with httpx.Client(base_url=sim.base_url, headers=sim.headers) as c:
                    for _ in range(20):
                        assert c.get("/v1/rl/training-sessions").json()["data"]
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and sim.requests.count() == 160


def test_chunked_request_body() -> None:
    with RLSimulator() as sim, httpx.Client(base_url=sim.base_url, headers=sim.headers) as c:
        rid = sim.world.create_model_resource()

        def chunks():  # a generator body makes httpx use Transfer-Encoding: chunked
            yield b'{"model_resources_id": '
            yield f'"{rid}"}}'.encode()

        r = c.post("/v1/rl/training-sessions", content=chunks())
        assert r.status_code == 200 and r.json()["model_resources_id"] == rid
        assert c.get("/v1/rl/supported-models").status_code == 200  # stream still in sync
