"""The idle guard against the simulator with a real DagsterInstance: the sensor picks idle
READY resources within the policy, each requested run executes for real; dry run reports and
stops nothing, acting mode stops exactly once, refusals are reported and the guard goes on."""

import re

import dagster as dg
import pytest

from rl_sessions_dagster import IdleGuardOptions, IdlePolicy
from rl_sessions_dagster.sensors.idle_guard import build_idle_guard

from .conftest import make_resource

MODEL = "Qwen/Qwen3-8B"
POLICY_FIELDS = {"created_by", "allow_ids", "deny_ids", "allow_base_models", "deny_base_models",
                 "force"}  # fmt: skip
OPTION_FIELDS = {"stop_attempts", "tick_budget_seconds", "unavailable_alarm_seconds"}


def setup(sim, instance, **kwargs):
    policy_fields = {k: kwargs.pop(k) for k in list(kwargs) if k in POLICY_FIELDS}
    options = IdleGuardOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_FIELDS})
    job, sensor = build_idle_guard(
        policy=IdlePolicy(idle_seconds=600, **policy_fields), options=options, **kwargs
    )
    defs = dg.Definitions(jobs=[job], sensors=[sensor], resources={"together": make_resource(sim)})
    return job, defs


def run(sim, instance, job, request):
    result = job.execute_in_process(
        run_config=request.run_config,
        tags=request.tags,
        instance=instance,
        resources={"together": make_resource(sim)},
    )
    assert result.success
    (mat,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    return result.output_for_node(job.nodes[0].name), mat.event_specific_data.metadata


@pytest.fixture
def idle_world(sim):
    """Idle mine (READY 20 min, no session), busy mine, idle someone else's, young mine."""
    w = sim.world
    ids = {
        "idle": w.create_model_resource(MODEL, inactive_timeout=3600),
        "other": w.create_model_resource(MODEL, created_by="someone_else"),
        "busy": w.create_model_resource(MODEL),
    }
    done = w.create_session(ids["idle"])
    w.create_session(ids["busy"])
    w.stop_session(done, immediate=True)
    w.advance_clock(1200)
    ids["young"] = w.create_model_resource(MODEL)
    return ids


def test_dry_run_reports_and_stops_nothing(sim, instance, ticker, idle_world):
    job, defs = setup(sim, instance)
    t = ticker(defs, "together_rl_idle_guard_sensor")
    data = t.tick()
    (req,) = data.run_requests
    assert req.run_key.startswith(f"idle_report:{idle_world['idle']}:")
    assert req.tags["together/guard_mode"] == "dry_run"
    # 20 min by the world's clock; the HTTP Date it is read from has 1 s resolution.
    assert req.tags["together/idle_minutes"] in ("19", "20")
    action, meta = run(sim, instance, job, req)
    assert action == "would_stop"
    price = sim.world.price_per_hour(MODEL)
    # Idle since the session stopped at t0; expires 60 min after the last activity (t0).
    assert meta["price_per_hour"].value == price
    assert meta["saves_until_expiry"].value == pytest.approx(price * 40 / 60, rel=0.01)
    assert sorted(sim.world.billing_resources()) == sorted(idle_world.values())
    assert t.tick().run_requests[0].run_key == req.run_key  # same key: Dagster runs it once


def test_acting_mode_stops_each_idle_resource_once(sim, instance, ticker, idle_world):
    job, defs = setup(sim, instance, dry_run=False, created_by=None,
                      deny_ids=[idle_world["young"]])  # fmt: skip
    t = ticker(defs, "together_rl_idle_guard_sensor")
    reqs = {r.tags["together/model_resources_id"]: r for r in t.tick().run_requests}
    assert set(reqs) == {idle_world["idle"], idle_world["other"]}  # created_by=None: all
    for req in reqs.values():
        assert run(sim, instance, job, req)[0] == "stopped"
    assert sorted(sim.world.billing_resources()) == sorted(
        [idle_world["busy"], idle_world["young"]]
    )
    assert t.tick().run_requests == []


def test_refusals_are_reported_and_the_guard_goes_on(sim, instance, ticker, idle_world):
    world = sim.world
    world.protect_resource(idle_world["idle"])
    job, defs = setup(sim, instance, dry_run=False)
    (req,) = ticker(defs, "together_rl_idle_guard_sensor").tick().run_requests
    assert run(sim, instance, job, req)[0] == "not_permitted"
    # A session attaches between the tick and the run: the run re-checks and leaves it.
    world.protect_resource(idle_world["idle"], False)
    world.create_session(idle_world["idle"])
    assert run(sim, instance, job, req)[0] == "skipped_busy"
    assert idle_world["idle"] in world.billing_resources()


def test_policy_lists(sim, instance, ticker, idle_world):
    _, defs = setup(sim, instance, allow_base_models=["Qwen/Qwen3-32B"])
    assert ticker(defs, "together_rl_idle_guard_sensor").tick().run_requests == []
    _, defs = setup(sim, instance, created_by=None, allow_ids=[idle_world["other"]])
    (req,) = ticker(defs, "together_rl_idle_guard_sensor").tick().run_requests
    assert req.tags["together/model_resources_id"] == idle_world["other"]


def test_transient_failure_skips(sim, instance, ticker, idle_world):
    _, defs = setup(sim, instance)
    sim.faults.add("GET /v1/rl/model-resources", status=503, times=10)
    data = ticker(defs, "together_rl_idle_guard_sensor").tick()
    assert "will retry" in data.skip_message


def fail_run(instance, job, request, *, cancel=False):
    """A guard run that ended badly (a crashed pod, a cancel from the UI), staged on the
    instance with the tags the sensor gave it."""
    run = instance.create_run_for_job(job, run_config=request.run_config, tags=request.tags)
    (instance.report_run_canceled if cancel else instance.report_run_failed)(run)


def test_a_failed_stop_is_requested_again_then_given_up(sim, instance, ticker, idle_world):
    job, defs = setup(sim, instance, dry_run=False, stop_attempts=3, deny_ids=[idle_world["young"]])
    t = ticker(defs, "together_rl_idle_guard_sensor")
    (first,) = t.tick().run_requests
    assert first.tags["together/guard_attempt"] == "1"
    assert t.tick().run_requests[0].run_key == first.run_key  # nothing failed: same key
    fail_run(instance, job, first)
    (second,) = t.tick().run_requests
    assert second.run_key == f"{first.run_key}:retry1"
    assert second.tags["together/guard_attempt"] == "2"
    fail_run(instance, job, second, cancel=True)
    (third,) = t.tick().run_requests
    assert third.run_key == f"{first.run_key}:retry2"
    fail_run(instance, job, third)
    data = t.tick()
    assert data.run_requests == []
    (warning,) = [m for level, m in t.log_messages() if level == "WARNING"]
    assert "gave up" in warning and idle_world["idle"] in warning and "3 failed runs" in warning
    assert idle_world["idle"] in sim.world.billing_resources()  # nothing stopped it
    # A fresh idle stretch (the resource was used) starts the count again.
    sim.world.stop_session(sim.world.create_session(idle_world["idle"]), immediate=True)
    sim.world.advance_clock(601)
    (fresh,) = t.tick().run_requests
    assert fresh.tags["together/guard_attempt"] == "1" and fresh.run_key != first.run_key
    assert run(sim, instance, job, fresh)[0] == "stopped"


def test_the_run_refuses_a_resource_used_after_the_decision(sim, instance, ticker, idle_world):
    job, defs = setup(sim, instance, dry_run=False)
    (req,) = ticker(defs, "together_rl_idle_guard_sensor").tick().run_requests
    # A session is created on it and fails at once, between the decision and the run.
    sim.world.create_session(idle_world["idle"], fail_at_creation=True)
    action, meta = run(sim, instance, job, req)
    assert action == "skipped_recently_used"
    assert re.search(r": used \d s ago$", meta["decision"].value)
    assert sim.world.stop_requests() == []


def test_a_paused_session_keeps_the_resource_even_with_force(sim, instance, ticker, idle_world):
    sid = sim.world.create_session(idle_world["idle"])
    sim.world.set_status(sid, "TRAINING_SESSION_STATUS_PAUSED")
    sim.world.advance_clock(900)
    job, defs = setup(sim, instance, dry_run=False, force=True)
    t = ticker(defs, "together_rl_idle_guard_sensor")
    (young,) = t.tick().run_requests  # the idle one is kept, and the tick says why
    assert young.tags["together/model_resources_id"] == idle_world["young"]
    (summary,) = [m for _, m in t.log_messages() if "READY" in m]
    assert f"{idle_world['idle']}: live session(s) {sid} TRAINING_SESSION_STATUS_PAUSED" in summary
    req = dg.RunRequest(
        run_config={"ops": {"together_rl_idle_guard_stop": {"config": {
            "model_resources_id": idle_world["idle"], "idle_since_ms": 0, "dry_run": False,
            "force": True}}}},
    )  # fmt: skip
    action, meta = run(sim, instance, job, req)
    assert action == "skipped_busy" and meta["live_sessions"].value == 1
    assert sim.world.stop_requests() == []
