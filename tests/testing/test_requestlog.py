"""Request log: records, counters per template, secrets never logged."""

from __future__ import annotations

import httpx

from rl_sessions_dagster.testing import RequestLog, RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.simulator.requestlog import RequestRecord

from .conftest import API_KEY, RL


def test_records_and_counts_per_template(
    sim: RLSimulator, client: httpx.Client, world: SimulatedWorld
) -> None:
    a, b = world.create_session(), world.create_session()
    client.get(
        f"{RL}/training-sessions", params={"status": "TRAINING_SESSION_STATUS_RUNNING", "limit": 5}
    )
    client.get(f"{RL}/training-sessions/{a}")
    client.get(f"{RL}/training-sessions/{b}")
    client.post(
        f"{RL}/training-sessions/{a}/operations/optim-step", headers={"Idempotency-Key": "idem-1"}
    )
    client.get(f"{RL}/training-sessions/nope")
    counts = sim.requests.counts()
    assert counts["GET /v1/rl/training-sessions/{id}"] == 3
    assert counts["GET /v1/rl/training-sessions"] == 1
    assert sim.requests.count() == len(sim.requests) == 5
    assert sim.requests.count("GET") == 4
    assert sim.requests.count(template="/v1/rl/training-sessions/{id}") == 3
    assert sim.requests.count("get", "/v1/rl/training-sessions*") == 4
    assert sim.requests.count(status=404) == 1
    listed = sim.requests.last("GET", "/v1/rl/training-sessions")
    assert listed is not None
    assert listed.query == {"status": ["TRAINING_SESSION_STATUS_RUNNING"], "limit": ["5"]}
    assert listed.param("limit") == "5" and listed.status == 200 and listed.authorized
    assert listed.duration_s > 0 and listed.fault is None
    op = sim.requests.last("POST")
    assert op is not None and op.idempotency_key == "idem-1"
    assert op.template == "/v1/rl/training-sessions/{id}/operations/optim-step"
    assert op.path == f"/v1/rl/training-sessions/{a}/operations/optim-step"
    ids = [r.request_id for r in sim.requests.records()]
    assert len(set(ids)) == 5


def test_request_id_matches_the_response_header(sim: RLSimulator, client: httpx.Client) -> None:
    r = client.get(f"{RL}/supported-models")
    rec = sim.requests.last()
    assert rec is not None and rec.request_id == r.headers["x-request-id"]


def test_authorization_is_never_logged(sim: RLSimulator, client: httpx.Client) -> None:
    client.get(f"{RL}/training-sessions")
    httpx.get(
        f"{sim.base_url}{RL}/training-sessions", headers={"Authorization": "Bearer sk-other-SECRET"}
    )
    blob = repr(sim.requests.records()) + repr(sim.requests.counts())
    assert API_KEY not in blob and "sk-other-SECRET" not in blob
    assert [r.authorized for r in sim.requests.records()] == [True, False]
    assert sim.requests.count(status=401) == 1


def test_unmatched_paths_get_generic_templates(sim: RLSimulator, client: httpx.Client) -> None:
    client.get(f"{RL}/unknown/123e4567-e89b-42d3-a456-426614174000/x")
    rec = sim.requests.last()
    assert rec is not None and rec.template == "/v1/rl/unknown/{id}/x" and rec.status == 404


def test_reset_and_bounded_records() -> None:
    log = RequestLog(max_records=2)
    for i in range(3):
        log.record(
            RequestRecord(
                request_id=f"req_{i}", method="GET", path="/p", template="/p", query={},
                status=200, fault=None, idempotency_key=None, authorized=True, duration_s=0.0,
                started_at=0.0,
            )
        )  # fmt: skip
    assert len(log.records()) == 2 and log.count() == 3  # counters outlive the buffer
    log.reset()
    assert log.count() == 0 and log.records() == [] and log.last() is None
