"""Launching training from Dagster: real runs in a real DagsterInstance against the simulator
over HTTP. A run that succeeds, fails, is cancelled, or cannot provision leaves no session
active and no resource it created billing; a refused stop is reported, never forced."""

import os
import signal
import threading

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api.checkpoints import create_inference_checkpoint_and_wait
from rl_sessions_dagster.api.lifecycle import ResourceSpec
from rl_sessions_dagster.training import TrainingLaunchConfig, launched_session
from tests.support import sim_resource

API_KEY = "sk-test-CANARY-launch"
pytestmark = pytest.mark.sim(api_key=API_KEY, seed=3)
MODEL = "Qwen/Qwen3-8B"


def resource(sim) -> TogetherRLResource:
    return sim_resource(sim, max_attempts=2, backoff_initial=0.01)


def active_sessions(world):
    return [s["id"] for s in world.sessions() if s["status"].endswith(("RUNNING", "CREATING"))]


def run_job(sim, instance, train_fn, **config):
    @dg.op
    def together_rl_training(
        context: dg.OpExecutionContext, config: TrainingLaunchConfig, together: TogetherRLResource
    ):
        with config.launch(context, together) as launched:
            return train_fn(context, launched)

    @dg.job
    def training_job():
        together_rl_training()

    cfg = {"base_model": MODEL, "poll_interval_seconds": 0.05, **config}
    return training_job.execute_in_process(
        instance=instance,
        resources={"together": resource(sim)},
        run_config={"ops": {"together_rl_training": {"config": cfg}}},
        raise_on_error=False,
    )


def test_successful_run_trains_checkpoints_and_cleans_up(sim, instance):
    world = sim.world
    seen = {}

    def train(context, launched):
        seen["session"] = launched.session_id
        seen["resource"] = launched.resource.id
        assert launched.session.status.short == "RUNNING" and launched.created_resource
        ckpt = create_inference_checkpoint_and_wait(
            launched.client, launched.session_id, poll_interval=0.01
        )
        return ckpt.id

    result = run_job(
        sim, instance, train, display_name="sweep-a-1", wandb_project="grpo", lora_rank=16
    )
    assert result.success
    ckpt_id = result.output_for_node("together_rl_training")
    s = world.session(seen["session"])
    assert s["inference_checkpoints"][0]["id"] == ckpt_id
    assert s["display_name"] == "sweep-a-1" and s["metadata"]["wandb"]["project"] == "grpo"
    assert s["lora_config"]["rank"] == 16
    assert active_sessions(world) == [] and world.billing_resources() == []
    run = instance.get_run_by_id(result.run_id)
    assert run.tags["together/session_id"] == seen["session"]
    assert run.tags["together/model_resources_id"] == seen["resource"]


def test_failed_run_stops_session_and_created_resource(sim, instance):
    world = sim.world
    seen = {}

    def train(context, launched):
        seen["resource"] = launched.resource.id
        assert world.billing_resources() == [launched.resource.id]
        raise ValueError("reward model crashed")

    result = run_job(sim, instance, train)
    assert not result.success
    assert "reward model crashed" in str(result.failure_data_for_node("together_rl_training"))
    assert active_sessions(world) == [] and world.billing_resources() == []
    assert world.model_resource(seen["resource"])["status"].endswith(("STOPPING", "STOPPED"))


def test_run_cancelled_by_interrupt_stops_everything(sim, instance):
    """A real SIGINT (what a run worker gets when Dagster terminates the run) while the
    training function is working: Dagster raises DagsterExecutionInterruptedError inside it."""
    world = sim.world
    inside, seen = threading.Event(), {}

    def train(context, launched):
        seen["session"] = launched.session_id
        inside.set()
        try:
            for _ in range(600):  # at most 60 s; the interrupt ends it long before
                threading.Event().wait(0.1)
        except BaseException as exc:
            seen["interrupted_by"] = type(exc)
            raise
        raise AssertionError("the run was not interrupted")

    def interrupt():
        if inside.wait(60):
            os.kill(os.getpid(), signal.SIGINT)

    killer = threading.Thread(target=interrupt, daemon=True)
    killer.start()
    result = run_job(sim, instance, train)
    killer.join(5)
    assert not result.success
    assert seen["interrupted_by"] is dg.DagsterExecutionInterruptedError
    assert world.session(seen["session"])["status"].endswith(("STOPPING", "STOPPED"))
    assert active_sessions(world) == [] and world.billing_resources() == []


def test_interrupted_error_raised_inside_is_cleaned_up_too(sim, instance):
    world = sim.world

    def train(context, launched):
        raise dg.DagsterExecutionInterruptedError("terminated")

    result = run_job(sim, instance, train)
    assert not result.success
    assert active_sessions(world) == [] and world.billing_resources() == []


def test_reused_resource_is_not_stopped(sim, instance):
    world = sim.world
    mine = world.create_model_resource(MODEL, lora=True)

    def train(context, launched):
        assert launched.resource.id == mine and not launched.created_resource
        raise RuntimeError("boom")

    result = run_job(sim, instance, train)
    assert not result.success
    assert active_sessions(world) == []
    assert world.billing_resources() == [mine]  # the user's own resource keeps running


def test_refused_resource_stop_is_reported_not_forced(sim):
    world = sim.world
    with launched_session(resource(sim), ResourceSpec(MODEL), poll_interval=0.05) as launched:
        other = world.create_session(launched.resource.id, display_name="someone else's")
    results = [o.result for o in launched.cleanup]
    assert results == ["stopped", "refused_active_sessions"]
    assert world.session(other)["status"].endswith("RUNNING")  # never forced
    assert world.billing_resources() == [launched.resource.id]


def test_provisioning_that_times_out_stops_the_queued_resource(sim):
    world = sim.world
    world.set_gpu_capacity("B200-SXM", 0)  # nothing gets GPUs: queued forever
    from rl_sessions_dagster.api.errors import DeadlineExceeded

    with pytest.raises(DeadlineExceeded, match="queue position 1"):  # noqa: SIM117
        with launched_session(
            resource(sim), ResourceSpec(MODEL), ready_timeout=0.5, poll_interval=0.05
        ):
            raise AssertionError("never reached")
    assert world.queued_resources() == []
    (rid,) = world.billing()
    assert world.model_resource(rid)["status"].endswith(("STOPPING", "STOPPED"))


def test_session_that_fails_to_start_releases_the_resource(sim):
    world = sim.world
    world.fail_next_session_creates(1)
    from rl_sessions_dagster.api.lifecycle import SessionFailed

    with pytest.raises(SessionFailed) as info:  # noqa: SIM117
        with launched_session(resource(sim), ResourceSpec(MODEL), poll_interval=0.05):
            raise AssertionError("never reached")
    assert info.value.error_code == "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
    assert active_sessions(world) == [] and world.billing_resources() == []


def test_a_full_reusable_resource_leads_to_a_new_one(sim):
    world = sim.world
    full = world.create_model_resource(MODEL, lora=False)  # full-weight: one session at most
    world.create_session(full)
    spec = ResourceSpec(MODEL, lora_enabled=False)
    with launched_session(resource(sim), spec, poll_interval=0.05) as launched:
        assert launched.resource.id != full and launched.created_resource
    assert world.billing_resources() == [full]


def test_a_session_created_without_an_answer_is_found_and_stopped(sim):
    """The create reaches the service but the answer is lost (not retried: a retry could start
    a second session). The launch fails, yet the session it started is found and stopped."""
    world = sim.world
    sim.faults.add("POST /v1/rl/training-sessions", drop=True, process=True, times=1)
    from rl_sessions_dagster.api.errors import TransportError

    with pytest.raises(TransportError):  # noqa: SIM117
        with launched_session(
            resource(sim), ResourceSpec(MODEL), display_name="lost-answer", poll_interval=0.05
        ):
            raise AssertionError("never reached")
    (s,) = world.sessions()
    assert s["display_name"] == "lost-answer"
    assert s["status"].endswith(("STOPPING", "STOPPED"))
    assert active_sessions(world) == [] and world.billing_resources() == []


def test_a_resource_created_without_an_answer_is_found_and_stopped(sim):
    world = sim.world
    mine_before = world.create_model_resource(MODEL, lora=False)  # not matching, not touched
    sim.faults.add("POST /v1/rl/model-resources", drop=True, process=True, times=1)
    from rl_sessions_dagster.api.errors import TransportError

    with pytest.raises(TransportError):  # noqa: SIM117
        with launched_session(resource(sim), ResourceSpec(MODEL), poll_interval=0.05):
            raise AssertionError("never reached")
    (lost,) = [r for r in world.billing() if r != mine_before]
    assert world.model_resource(lost)["status"].endswith(("STOPPING", "STOPPED"))
    assert world.billing_resources() == [mine_before]
