"""Asset tests: the simulator's key and seed, and a resource that does not retry (``sim``,
``instance`` and ``resource`` are the root conftest's)."""

from collections.abc import Iterator
from typing import Any

import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api import RLSessionsClient

API_KEY = "sim-key"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": API_KEY, "seed": 11}


@pytest.fixture
def resource_options() -> dict[str, Any]:
    return {"max_attempts": 1}


@pytest.fixture
def client(resource: TogetherRLResource) -> Iterator[RLSessionsClient]:
    with resource.get_client() as c:
        yield c
