"""Lifecycle helpers over HTTP: bounded waits, stop outcomes, checkpoint-and-wait.

The client's sleeps advance the simulator's clock instead of sleeping, so a wait for a resource
that provisions in 10 simulated minutes takes no wall time, and the deadline is checked on a
clock that moves with it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rl_sessions_dagster.api import InferenceCheckpoint, RetryPolicy, RLSessionsClient
from rl_sessions_dagster.api.checkpoints import (
    CheckpointFailed,
    create_inference_checkpoint_and_wait,
    create_training_checkpoint_and_wait,
)
from rl_sessions_dagster.api.errors import DeadlineExceeded
from rl_sessions_dagster.api.lifecycle import (
    PriceCache,
    ResourceFailed,
    ResourceSpec,
    SessionFailed,
    find_ready_resource,
    stop_resource,
    stop_session,
    wait_for_resource_ready,
    wait_for_session_running,
)
from rl_sessions_dagster.api.models import TrainingCheckpoint
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY

MODEL = "Qwen/Qwen3-8B"


class SimTime:
    """A clock and a sleep that move the simulated world's time together."""

    def __init__(self, sim: RLSimulator) -> None:
        self.sim, self.now, self.sleeps = sim, 0.0, 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1
        self.sim.world.advance_clock(seconds)


@pytest.fixture
def simtime(sim: RLSimulator) -> SimTime:
    return SimTime(sim)


@pytest.fixture
def lc(sim: RLSimulator, simtime: SimTime) -> Iterator[RLSessionsClient]:
    policy = RetryPolicy(sleep=simtime.sleep, clock=simtime.clock, max_attempts=1)
    with RLSessionsClient(KEY, base_url=sim.base_url, timeout=5.0, retry=policy) as c:
        yield c


def test_wait_for_resource_ready_through_the_queue(sim, lc, simtime):
    world = sim.world
    world.resource_provision_delay = 600
    r = lc.create_model_resource(MODEL, compute_config={"gpu_type": "H100-80GB"})
    assert r.status.short == "PENDING"
    polls = []
    ready = wait_for_resource_ready(lc, r.id, poll_interval=30, on_poll=polls.append)
    assert ready.status.short == "READY" and ready.expires_at is not None
    assert [p.status.short for p in polls][:1] == ["PENDING"]
    assert 590 <= simtime.now <= 660


def test_wait_for_resource_is_bounded_and_names_the_queue_position(sim, lc, simtime):
    world = sim.world
    world.set_gpu_capacity("B200-SXM", 0)
    world.create_model_resource(MODEL, status="PENDING")
    r = lc.create_model_resource(MODEL)
    with pytest.raises(
        DeadlineExceeded, match=r"still MODEL_RESOURCES_STATUS_PENDING \(queue position 2\)"
    ):
        wait_for_resource_ready(lc, r.id, timeout=300, poll_interval=10)
    assert simtime.now <= 300
    with pytest.raises(ValueError, match="bounded"):
        wait_for_resource_ready(lc, r.id, timeout=None)


def test_wait_for_resource_raises_with_the_api_error(sim, lc):
    world = sim.world
    world.resource_provision_delay = 600
    r = lc.create_model_resource(MODEL)
    world.fail_model_resource(r.id, code="MODEL_RESOURCES_ERROR_CODE_SOMETHING_NEW", message="gone")
    with pytest.raises(ResourceFailed) as info:
        wait_for_resource_ready(lc, r.id, poll_interval=10)
    assert info.value.error_code == "MODEL_RESOURCES_ERROR_CODE_SOMETHING_NEW"
    assert info.value.resource.error.message == "gone"


def test_wait_for_session_running_and_failing(sim, lc):
    world = sim.world
    world.session_start_delay = 20
    rid = world.create_model_resource(MODEL)
    s = lc.create_session(rid)
    assert wait_for_session_running(lc, s.id, poll_interval=5).status.short == "RUNNING"
    world.fail_next_session_creates(1)
    bad = lc.create_session(rid)
    with pytest.raises(SessionFailed) as info:
        wait_for_session_running(lc, bad.id, poll_interval=5)
    assert info.value.error_code == "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"


def test_find_ready_resource_matches_configuration_and_owner(sim, lc):
    world = sim.world
    world.create_model_resource(MODEL, lora=False)
    world.create_model_resource(MODEL, created_by="someone_else")
    world.resource_provision_delay = 600
    world.create_model_resource(MODEL, status="PENDING")
    good = world.create_model_resource(MODEL)
    spec = ResourceSpec(MODEL, gpu_type="B200-SXM", num_generator_replicas=1)
    assert find_ready_resource(lc, spec).id == good
    assert find_ready_resource(lc, ResourceSpec(MODEL, gpu_type="H100-80GB")) is None
    assert find_ready_resource(lc, ResourceSpec("Qwen/Qwen3-32B")) is None


def test_price_cache_asks_once_per_configuration_and_keeps_failures(sim, lc):
    """Two resources of one configuration cost one ``estimate-cost``; another configuration
    costs another; an unpriceable one is ``(None, None)`` with its error kept, asked once."""
    world = sim.world
    a, b = world.create_model_resource(MODEL), world.create_model_resource(MODEL)
    full = world.create_model_resource(MODEL, lora=False)
    resources = {r.id: r for r in lc.list_model_resources()}
    unpriceable = resources[a].model_copy(update={"id": "mr-unknown", "base_model": "nope/x"})
    prices = PriceCache(lc)
    sim.requests.reset()

    assert prices.price(resources[a]) == (world.price_per_hour(MODEL), "USD")
    assert prices.price(resources[b]) == (world.price_per_hour(MODEL), "USD")
    assert prices.price(resources[full]) == (world.price_per_hour(MODEL, lora=False), "USD")
    assert prices.price(unpriceable) == (None, None)
    assert prices.price(unpriceable) == (None, None)

    assert prices.requests == 3
    assert sim.requests.count("POST", "*/estimate-cost") == 3
    assert len(prices.errors) == 1 and prices.errors[0].startswith("mr-unknown: ")
    assert "nope/x" in prices.errors[0]


def test_stop_outcomes_are_reported_not_raised(sim, lc):
    world = sim.world
    rid = world.create_model_resource(MODEL)
    sid = world.create_session(rid)
    refused = stop_resource(lc, rid)
    assert refused.result == "refused_active_sessions" and not refused.ok
    assert world.model_resource(rid)["status"].endswith("READY")
    world.protect_resource(rid)
    assert stop_resource(lc, rid, force=True).result == "not_permitted"
    world.protect_resource(rid, False)
    assert stop_session(lc, sid).result == "stopped"
    assert stop_session(lc, sid).result == "already_stopped"
    assert stop_resource(lc, rid).result == "stopped"
    assert stop_resource(lc, rid).result == "already_stopped"
    assert stop_resource(lc, "00000000-0000-4000-8000-000000000000").result == "not_found"
    assert stop_session(lc, "00000000-0000-4000-8000-000000000000").result == "not_found"


def test_checkpoint_and_wait_returns_typed_checkpoints(sim, lc):
    world = sim.world
    world.operation_polls = 3
    sid = world.create_session(world.create_model_resource(MODEL))
    world.advance_steps(sid, 7)
    inf = create_inference_checkpoint_and_wait(lc, sid, poll_interval=1)
    assert isinstance(inf, InferenceCheckpoint) and inf.step == 7 and inf.id
    assert inf.id in [c["id"] for c in world.session(sid)["inference_checkpoints"]]
    tr = create_training_checkpoint_and_wait(lc, sid, poll_interval=1)
    assert isinstance(tr, TrainingCheckpoint) and tr.step == 7


def test_checkpoint_failure_and_deadline(sim, lc):
    world = sim.world
    sid = world.create_session(world.create_model_resource(MODEL))
    world.fail_next_operations(1)
    with pytest.raises(CheckpointFailed) as info:
        create_inference_checkpoint_and_wait(lc, sid, poll_interval=1)
    assert info.value.operation.status.short == "FAILED"
    world.operation_polls = 1000
    with pytest.raises(DeadlineExceeded):
        create_inference_checkpoint_and_wait(lc, sid, timeout=30, poll_interval=1)
