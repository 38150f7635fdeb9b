"""Fault injection as a client observes it."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.simulator.faults import FaultRule

from .conftest import RL

SESSIONS = f"{RL}/training-sessions"


def test_status_fault_for_the_next_n_requests(sim: RLSimulator, client: httpx.Client) -> None:
    sim.faults.add("GET /v1/rl/training-sessions", status=503, times=2)
    got = [client.get(SESSIONS) for _ in range(3)]
    assert [r.status_code for r in got] == [503, 503, 200]
    err = got[0].json()["error"]
    assert err["type"] == "server_error" and err["code"] == "simulated_fault"
    assert got[0].headers["x-request-id"].startswith("req_")
    assert client.get(f"{RL}/checkpoints").status_code == 200  # other routes unaffected
    assert sim.requests.count("GET", SESSIONS, status=503, faulted=True) == 2
    assert sim.requests.fault_counts() == {"status:503": 2}


def test_rate_limit_headers(sim: RLSimulator, client: httpx.Client) -> None:
    sim.faults.add("* /v1/rl/*", status=429, retry_after=2, retry_after_ms=1500, times=1)
    r = client.get(SESSIONS)
    assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limit_error"
    assert r.headers["retry-after"] == "2" and r.headers["retry-after-ms"] == "1500"
    assert client.get(SESSIONS).status_code == 200


@pytest.mark.parametrize("status", [408, 500, 502, 418])
def test_any_status(sim: RLSimulator, client: httpx.Client, status: int) -> None:
    sim.faults.add("/v1/rl/supported-models", status=status, headers={"x-should-retry": "true"})
    r = client.get(f"{RL}/supported-models")
    assert r.status_code == status and r.headers["x-should-retry"] == "true"


def test_nth_schedule(sim: RLSimulator, client: httpx.Client) -> None:
    sim.faults.add(f"GET {SESSIONS}", status=500, nth=[2, 4])
    assert [client.get(SESSIONS).status_code for _ in range(5)] == [200, 500, 200, 500, 200]


def test_rate_is_seeded_and_reproducible() -> None:
    def run() -> list[int]:
        with RLSimulator(seed=9) as s, httpx.Client(base_url=s.base_url, headers=s.headers) as c:
            s.faults.add(SESSIONS, status=503, rate=0.3)
            return [c.get(SESSIONS).status_code for _ in range(40)]

    first = run()
    assert first == run()
    assert 3 <= first.count(503) <= 25


def test_delay_does_not_hold_the_world_lock(sim: RLSimulator, world: SimulatedWorld) -> None:
    sim.faults.add(SESSIONS, delay_s=5.0, times=1)
    elapsed: list[float] = []

    def slow_call() -> None:
        start = time.perf_counter()
        # A read timeout well above the 5 s delay (httpx's default is exactly 5 s: on a loaded
        # machine the delayed answer arrived just after it and the request timed out).
        with httpx.Client(base_url=sim.base_url, headers=sim.headers, timeout=60) as c:
            assert c.get(SESSIONS).status_code == 200
        elapsed.append(time.perf_counter() - start)

    with httpx.Client(base_url=sim.base_url, headers=sim.headers) as fast:
        t = threading.Thread(target=slow_call)
        t.start()
        while sim.faults.rules[0].applied == 0:  # the slow request is now sleeping
            time.sleep(0.005)
        world.create_session()
        fast.get(f"{RL}/checkpoints").raise_for_status()
        # Done while the slow request still sleeps: the delay holds no lock (no time
        # threshold, so a loaded machine cannot fail it).
        slow_still_sleeping = t.is_alive()
        t.join()
    assert slow_still_sleeping and elapsed[0] >= 5.0
    rec = sim.requests.last("GET", SESSIONS)
    assert rec is not None and rec.fault == "delay:5" and rec.status == 200


def test_delay_then_status(sim: RLSimulator, client: httpx.Client) -> None:
    sim.faults.add(SESSIONS, status=504, delay_s=0.2, times=1)
    start = time.perf_counter()
    assert client.get(SESSIONS).status_code == 504
    assert time.perf_counter() - start >= 0.2
    assert sim.requests.fault_counts() == {"status:504+delay:0.2": 1}


def test_drop_closes_without_response(sim: RLSimulator, client: httpx.Client) -> None:
    sim.faults.add(SESSIONS, drop=True, times=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        client.get(SESSIONS)
    assert client.get(SESSIONS).status_code == 200  # the client reconnects
    rec = sim.requests.records("GET", SESSIONS)[0]
    assert rec.status is None and rec.fault == "drop"


def test_reset_after_headers(sim: RLSimulator, client: httpx.Client, world: SimulatedWorld) -> None:
    world.create_session()
    sim.faults.add(SESSIONS, reset_after_headers=True, times=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        client.get(SESSIONS)
    assert client.get(SESSIONS).status_code == 200


def test_malformed_body(sim: RLSimulator, client: httpx.Client, world: SimulatedWorld) -> None:
    world.create_session()
    sim.faults.add(SESSIONS, malformed=True, times=1)
    r = client.get(SESSIONS)
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        r.json()
    assert client.get(SESSIONS).json()["data"]


def test_lost_response_after_processing(
    sim: RLSimulator, client: httpx.Client, world: SimulatedWorld
) -> None:
    rid = world.create_model_resource()
    sim.faults.add(f"POST {SESSIONS}", status=502, process=True, times=1)
    r = client.post(SESSIONS, json={"model_resources_id": rid})
    assert r.status_code == 502
    assert world.counts()["sessions"] == 1  # the create happened: a blind retry would duplicate it
    sid = world.session_ids()[0]
    sim.faults.add(f"POST {SESSIONS}/*/operations/optim-step", drop=True, process=True, times=1)
    key = {"Idempotency-Key": "step-1"}
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        client.post(f"{SESSIONS}/{sid}/operations/optim-step", headers=key)
    retried = client.post(f"{SESSIONS}/{sid}/operations/optim-step", headers=key).json()
    assert world.counts()["operations"] == 1 and retried["id"]


def test_regex_and_concrete_path_patterns(
    sim: RLSimulator, client: httpx.Client, world: SimulatedWorld
) -> None:
    a, b = world.create_session(), world.create_session()
    sim.faults.add(f"GET {SESSIONS}/{a}", status=404)
    sim.faults.add(re.compile(r"^PATCH "), status=409)
    assert client.get(f"{SESSIONS}/{a}").status_code == 404
    assert client.get(f"{SESSIONS}/{b}").status_code == 200
    assert client.patch(f"{SESSIONS}/{b}", json={}).status_code == 409
    sim.faults.clear()
    assert client.get(f"{SESSIONS}/{a}").status_code == 200 and sim.faults.rules == []


def test_control_endpoints_are_never_faulted(sim: RLSimulator) -> None:
    sim.faults.add("*", status=500)
    assert httpx.get(f"{sim.base_url}/_sim/health").status_code == 200
    assert httpx.get(f"{sim.base_url}{SESSIONS}", headers=sim.headers).status_code == 500


def test_rule_validation_and_counters(sim: RLSimulator, client: httpx.Client) -> None:
    with pytest.raises(ValueError):
        FaultRule("*")
    with pytest.raises(ValueError):
        FaultRule("*", status=500, drop=True)
    rule = sim.faults.add(SESSIONS, status=500, times=1)
    for _ in range(3):
        client.get(SESSIONS)
    assert (rule.matched, rule.applied) == (3, 1)
    sim.faults.remove(rule)
    assert sim.faults.rules == []


def test_stop_is_fast_during_a_long_delay(world: SimulatedWorld) -> None:
    sim = RLSimulator(world=world).start()
    sim.faults.add("*", delay_s=120)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            httpx.get(f"{sim.base_url}{SESSIONS}", headers=sim.headers, timeout=60)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.2)
    start = time.perf_counter()
    sim.stop()
    # Far under the 60 s the stuck request would hold a waiting stop (generous for a loaded
    # machine; the typical stop takes milliseconds).
    assert time.perf_counter() - start < 20.0
    t.join(30)
    assert not t.is_alive() and errors
