"""Fixtures for the asset tests: a simulator over real HTTP and a real DagsterInstance."""

from collections.abc import Iterator

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.testing import RLSimulator

API_KEY = "sim-key"


@pytest.fixture
def sim() -> Iterator[RLSimulator]:
    with RLSimulator(api_key=API_KEY, seed=11) as simulator:
        yield simulator


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def resource(sim: RLSimulator) -> TogetherRLResource:
    return TogetherRLResource(api_key=API_KEY, base_url=sim.base_url, max_attempts=1)


@pytest.fixture
def client(resource: TogetherRLResource) -> Iterator[RLSessionsClient]:
    with resource.get_client() as c:
        yield c
