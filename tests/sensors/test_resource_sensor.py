"""The model-resource sensor on the simulator over HTTP, with a real DagsterInstance: each event
kind once, first tick quiet, skip on a transient failure, and nothing raised on drift."""

import json

import dagster as dg
import pytest

from rl_sessions_dagster.core.events import ResourceEventKind
from rl_sessions_dagster.core.resources import ResourceTrackerState
from rl_sessions_dagster.sensors import (
    ResourceFilter,
    ResourceRoute,
    ResourceSensorOptions,
    build_model_resource_sensor,
)

from .conftest import make_resource

NAME = "together_rl_model_resource_sensor"


@dg.op
def noop() -> None:
    pass


@dg.job
def resource_job() -> None:
    noop()


OPTION_FIELDS = {"expiring_lead_seconds", "queued_long_seconds", "max_runs_per_tick",
                 "unavailable_alarm_seconds"}  # fmt: skip


#: The single-target wiring: every model-resource event kind to one job.
EVERY_KIND = ResourceRoute(list(ResourceEventKind), job=resource_job)


def defs_for(sim, **kwargs):
    options = ResourceSensorOptions(
        **{k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_FIELDS}
    )
    sensor = build_model_resource_sensor(routes=[EVERY_KIND], options=options, **kwargs)
    return dg.Definitions(
        jobs=[resource_job], sensors=[sensor], resources={"together": make_resource(sim)}
    )


def keys(data):
    return [r.run_key for r in data.run_requests or []]


def test_each_resource_event_once_and_first_tick_quiet(sim, ticker):
    world = sim.world
    history_ready = world.create_model_resource(inactive_timeout=3600)
    history_stopped = world.create_model_resource()
    world.stop_model_resource(history_stopped)
    world.advance_clock(1)
    t = ticker(defs_for(sim, expiring_lead_seconds=300, queued_long_seconds=300), NAME)
    first = t.tick()
    assert keys(first) == [] and "0 run(s)" in first.skip_message

    world.resource_provision_delay = 4000.0
    queued = world.create_model_resource(status="PENDING")
    ready = world.create_model_resource(inactive_timeout=600)
    failing = world.create_model_resource(status="PENDING")
    world.fail_model_resource(failing, code="MODEL_RESOURCES_ERROR_CODE_CAPACITY_WAIT_TIMEOUT",
                              message="no capacity")  # fmt: skip
    world.advance_clock(1)
    data = t.tick()
    assert set(keys(data)) == {f"resource_ready:{ready}", f"resource_error:{failing}"}
    err = next(r for r in data.run_requests if r.run_key.startswith("resource_error"))
    assert err.tags["together/error_code"] == "MODEL_RESOURCES_ERROR_CODE_CAPACITY_WAIT_TIMEOUT"
    assert err.tags["together/error_message"] == "no capacity"
    assert err.tags["together/model_resources_id"] == failing
    assert keys(t.tick()) == []

    # Idle 5+ minutes: the 600 s resource is within 300 s of its deadline; the queue is long.
    world.advance_clock(310)
    data = t.tick()
    expires_ms = _ms(world, ready)
    assert set(keys(data)) == {
        f"resource_expiring:{ready}:{expires_ms}",
        f"resource_queued_long:{queued}",
    }
    q = next(r for r in data.run_requests if r.run_key.startswith("resource_queued_long"))
    assert q.tags["together/queue_position"] == "1"
    assert keys(t.tick()) == []

    world.stop_model_resource(ready)
    world.stop_model_resource(history_ready)
    world.advance_clock(1)
    data = t.tick()
    assert set(keys(data)) == {f"resource_stopped:{ready}", f"resource_stopped:{history_ready}"}
    assert keys(t.tick()) == []
    all_keys = t.run_keys()
    assert len(all_keys) == len(set(all_keys)) == 6
    doc = json.loads(t.cursor)
    tracked = ResourceTrackerState.from_cursor(t.cursor).tracked
    assert doc["kind"] == "model_resources" and list(tracked) == [queued]
    # Terminal resources are remembered only inside the look-back window, then forgotten.
    world.advance_clock(700)
    world.create_model_resource()
    t.tick()
    assert ready not in ResourceTrackerState.from_cursor(t.cursor).recent_terminal
    assert keys(t.tick()) == []


def _ms(world, rid):
    from datetime import datetime

    raw = world.model_resource(rid)["expires_at"]
    return int(datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp() * 1000)


def test_a_new_deadline_after_activity_is_a_new_expiring_event(sim, ticker):
    world = sim.world
    t = ticker(defs_for(sim, expiring_lead_seconds=120), NAME)
    t.tick()
    rid = world.create_model_resource(inactive_timeout=300)
    world.advance_clock(1)
    assert keys(t.tick()) == [f"resource_ready:{rid}"]
    world.advance_clock(200)
    first = keys(t.tick())
    assert first == [f"resource_expiring:{rid}:{_ms(world, rid)}"]
    world.create_session(rid)  # activity: the deadline moves later
    world.advance_clock(200)
    second = keys(t.tick())
    assert len(second) == 1 and second[0].startswith(f"resource_expiring:{rid}:")
    assert second != first
    assert keys(t.tick()) == []


def test_transient_failure_skips_and_keeps_the_cursor(sim, ticker):
    world = sim.world
    t = ticker(defs_for(sim), NAME)
    t.tick()
    cursor = t.cursor
    rid = world.create_model_resource()
    sim.faults.add("GET /v1/rl/model-resources", status=503, times=10)
    data = t.tick()
    assert data.skip_message and "will retry" in data.skip_message
    # What is tracked is kept; the cursor only notes since when the API fails.
    kept = ResourceTrackerState.from_cursor(t.cursor)
    assert kept.failing_since_ms is not None
    kept.failing_since_ms = None
    assert kept.to_cursor() == cursor
    sim.faults.clear()
    assert keys(t.tick()) == [f"resource_ready:{rid}"]
    assert ResourceTrackerState.from_cursor(t.cursor).failing_since_ms is None


def test_an_outage_fails_a_tick_loudly_and_a_corrupt_cursor_is_recovered(sim, ticker):
    """The resource sensor has the session sensors' tick skeleton: the outage alarm, and an
    unreadable cursor handed to the shared recovery (restored from the tick history when it has
    one; the daemon test of the session sensor covers that path of the same function)."""
    world = sim.world
    t = ticker(defs_for(sim, unavailable_alarm_seconds=600), NAME)
    t.tick()
    sim.faults.add("GET /v1/rl/model-resources", status=503, times=1000)
    assert "will retry" in t.tick().skip_message
    state = ResourceTrackerState.from_cursor(t.cursor)
    state.failing_since_ms = (state.failing_since_ms or 0) - 11 * 60 * 1000
    t.cursor = state.to_cursor()
    with pytest.raises(Exception, match="unavailable for 11 min"):
        t.tick()
    sim.faults.clear()
    t.cursor = "{not json"
    world.create_model_resource()
    assert keys(t.tick()) == []  # no history to restore: starts over, quietly, and says so
    warnings = [m for level, m in t.log_messages() if level == "WARNING"]
    assert any("no readable cursor in this sensor's tick history" in m for m in warnings)


def test_unknown_status_and_error_code_are_kept_raw(sim, ticker):
    world = sim.world
    t = ticker(defs_for(sim), NAME)
    t.tick()
    rid = world.create_model_resource()
    world.advance_clock(1)
    assert keys(t.tick()) == [f"resource_ready:{rid}"]
    world.set_status(rid, "MODEL_RESOURCES_STATUS_HIBERNATING")
    assert keys(t.tick()) == []
    world.fail_model_resource(rid, code="MODEL_RESOURCES_ERROR_CODE_NEW_THING", message="x")
    (req,) = t.tick().run_requests
    assert req.run_key == f"resource_error:{rid}"
    assert req.tags["together/error_code"] == "MODEL_RESOURCES_ERROR_CODE_NEW_THING"
    assert req.tags["together/previous_status"] == "MODEL_RESOURCES_STATUS_HIBERNATING"


def test_filter_and_cap(sim, ticker):
    world = sim.world
    t = ticker(
        defs_for(sim, max_runs_per_tick=2, resource_filter=ResourceFilter(created_by="me")), NAME
    )
    t.tick()
    mine = [world.create_model_resource() for _ in range(3)]
    world.create_model_resource(created_by="someone_else")
    world.advance_clock(1)
    first = keys(t.tick())
    second = keys(t.tick())
    assert len(first) == 2 and len(second) == 1
    assert sorted(first + second) == sorted(f"resource_ready:{r}" for r in mine)


def test_everything_loads_together_and_the_key_stays_out(sim, ticker):
    """The new pieces in one Definitions (as a user wires them), and no API key in the cursor,
    tags or run config of the resource sensor."""
    from rl_sessions_dagster import (
        TogetherRLResource,
        TrainingLaunchConfig,
        build_idle_guard,
        build_spend_asset,
    )

    from .conftest import API_KEY

    guard_job, guard_sensor = build_idle_guard()

    @dg.op
    def train(
        context: dg.OpExecutionContext, config: TrainingLaunchConfig, together: TogetherRLResource
    ) -> None:
        with config.launch(context, together):
            pass

    @dg.job
    def training_job():
        train()

    sensor = build_model_resource_sensor(routes=[EVERY_KIND])
    defs = dg.Definitions(
        assets=[build_spend_asset()],
        jobs=[resource_job, guard_job, training_job],
        sensors=[sensor, guard_sensor],
        resources={"together": make_resource(sim)},
    )
    dg.Definitions.validate_loadable(defs)
    t = ticker(defs, NAME)
    t.tick()
    sim.world.fail_model_resource(sim.world.create_model_resource(), message="boom")
    data = t.tick()
    assert len(data.run_requests) == 1
    blob = json.dumps([t.cursor, [dict(r.tags) for r in data.run_requests],
                       [r.run_config for r in data.run_requests]])  # fmt: skip
    assert API_KEY not in blob


@dg.asset
def gpu_alerts() -> None:
    pass


def test_routes_send_each_kind_to_its_own_target_from_one_poll(sim, ticker):
    world = sim.world
    sensor = build_model_resource_sensor(
        routes=[
            ResourceRoute(["resource_ready"], job=resource_job),
            ResourceRoute(["resource_error", "resource_stopped"], assets=[gpu_alerts],
                          job_name="gpu_alert"),
        ],
    )  # fmt: skip
    defs = dg.Definitions(
        assets=[gpu_alerts], jobs=[resource_job], sensors=[sensor],
        resources={"together": make_resource(sim)},
    )  # fmt: skip
    dg.Definitions.validate_loadable(defs)
    t = ticker(defs, NAME)
    assert keys(t.tick()) == []
    ready = world.create_model_resource()
    failing = world.create_model_resource(status="PENDING")
    world.fail_model_resource(failing)
    world.advance_clock(1)
    sim.requests.reset()
    data = t.tick()
    assert sim.requests.count() == 1  # one list of the resources serves both routes
    by_key = {r.run_key: r.job_name for r in data.run_requests}
    assert by_key == {f"resource_ready:{ready}": "resource_job",
                      f"resource_error:{failing}": "gpu_alert"}  # fmt: skip
    world.stop_model_resource(ready)
    world.advance_clock(1)
    assert {r.run_key: r.job_name for r in t.tick().run_requests} == {
        f"resource_stopped:{ready}": "gpu_alert"
    }
    assert keys(t.tick()) == []


def test_routes_are_checked_when_built():
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="in more than one route"):
        build_model_resource_sensor(routes=[
            ResourceRoute(["resource_ready"], job=resource_job),
            ResourceRoute(["resource_ready"], assets=[gpu_alerts], job_name="x"),
        ])  # fmt: skip
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="the same job"):
        build_model_resource_sensor(routes=[
            ResourceRoute(["resource_ready"], job=resource_job),
            ResourceRoute(["resource_error"], job=resource_job),
        ])  # fmt: skip
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="job_name names the asset job"):
        ResourceRoute(["resource_ready"], job=resource_job, job_name="x")
    with pytest.raises(TypeError, match="job"):
        build_model_resource_sensor(job=resource_job)  # type: ignore[call-arg]
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="valid kinds: resource_ready") as e:
        ResourceRoute(["resource_redy"], job=resource_job)
    assert isinstance(e.value, ValueError)  # the same error type as a session event kind's
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="one model-resource event kind"):
        ResourceRoute([], job=resource_job)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="exactly one of job= and assets="):
        ResourceRoute(["resource_ready"])
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="routes is empty"):
        build_model_resource_sensor(routes=[])
    # The knobs are one typed object, checked when built (as PollingOptions is).
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="max_runs_per_tick"):
        ResourceSensorOptions(max_runs_per_tick=0)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="expiring_lead_seconds"):
        ResourceSensorOptions(expiring_lead_seconds=-1)
    with pytest.raises(TypeError):
        build_model_resource_sensor(routes=[EVERY_KIND], max_runs_per_tick=2)  # type: ignore[call-arg]
