"""Fixtures for the simulator tests: a manual-clock world (served by the root's ``sim``), and an
httpx client carrying the simulator's API key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

API_KEY = "sim-test-key-CANARY"
RL = "/v1/rl"


@pytest.fixture
def world() -> SimulatedWorld:
    return SimulatedWorld(seed=42, clock="manual")


@pytest.fixture
def sim_world(world: SimulatedWorld) -> SimulatedWorld:
    return world


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": API_KEY, "seed": 42}


@pytest.fixture
def client(sim: RLSimulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.base_url, headers=sim.headers, timeout=5.0) as c:
        yield c


@pytest.fixture
def ctl(sim: RLSimulator) -> Iterator[httpx.Client]:
    """The ``/_sim`` control API (no Authorization needed)."""
    with httpx.Client(base_url=f"{sim.base_url}/_sim", timeout=5.0) as c:
        yield c


def status(world: SimulatedWorld, sid: str) -> str:
    return str(world.session(sid)["status"]).removeprefix("TRAINING_SESSION_STATUS_")


def rstatus(world: SimulatedWorld, rid: str) -> str:
    return str(world.model_resource(rid)["status"]).removeprefix("MODEL_RESOURCES_STATUS_")


def all_pages(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """Follow ``meta.next_cursor`` until ``has_more`` is false; returns every item."""
    items: list[dict[str, Any]] = []
    after = None
    for _ in range(10_000):
        query = dict(params)
        if after:
            query["after"] = after
        body = client.get(path, params=query).raise_for_status().json()
        items.extend(body["data"])
        if not body["meta"]["has_more"]:
            assert body["meta"]["next_cursor"] == ""
            return items
        after = body["meta"]["next_cursor"]
        assert after == body["data"][-1]["id"]
    raise AssertionError("pagination did not terminate")
