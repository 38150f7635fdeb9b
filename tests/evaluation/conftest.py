"""The simulator's key and seed (``sim`` is the root's), and a client whose retries record their
sleeps instead of sleeping."""

from collections.abc import Iterator
from typing import Any

import pytest

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient
from rl_sessions_dagster.api.checkpoints import deployment_target
from rl_sessions_dagster.testing import RLSimulator

KEY = "sk-eval-CANARY-0123456789"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": KEY, "seed": 3}


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(sim: RLSimulator, sleeps: list[float]) -> Iterator[RLSessionsClient]:
    policy = RetryPolicy(max_attempts=4, sleep=sleeps.append)
    with RLSessionsClient(KEY, base_url=sim.base_url, timeout=10.0, retry=policy) as c:
        yield c


def checkpoint_model(sim: RLSimulator, client: RLSessionsClient, step: int) -> tuple[str, str]:
    """(checkpoint id, inference model name) of a new registered checkpoint at ``step``."""
    sid = sim.world.create_session()
    sim.world.advance_steps(sid, step)
    cid = sim.world.add_inference_checkpoint(sid)
    model = deployment_target(client.get_checkpoint(cid)).inference_model
    assert model
    return cid, model
