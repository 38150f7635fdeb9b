"""The GPU sections of TogetherRLComponent (model_resources, idle_guard, spend): YAML to
definitions, and the sensors they make evaluated against the simulator like the daemon does."""

import textwrap

import dagster as dg
import pytest

from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.components.support import defs_for

API_KEY = "sk-component-gpus-CANARY-7"

YAML = textwrap.dedent(
    """
    resource:
      api_key_env: RL_TEST_KEY
    model_resources:
      name: gpu_events
      running: true
      options: {expiring_lead_seconds: 120}
      routes:
        - event_kinds: [resource_ready]
          assets: 'key:"gpu_ready"'
          job_name: gpu_ready_job
        - event_kinds: [resource_error, resource_stopped, resource_expiring]
          assets: 'key:"gpu_alert"'
          job_name: gpu_alert_job
    idle_guard:
      idle_seconds: 60
      dry_run: false
      deny_base_models: [keep/this-model]
      minimum_interval_seconds: 30
    spend:
      cron_schedule: "0 * * * *"
      running: true
    """
)


@dg.asset
def gpu_ready() -> None: ...


@dg.asset
def gpu_alert() -> None: ...


def component_defs(yaml: str = YAML) -> dg.Definitions:
    return defs_for(yaml, gpu_ready, gpu_alert)


def test_yaml_builds_resource_sensor_guard_and_spend():
    defs = component_defs()
    dg.Definitions.validate_loadable(defs)
    events = defs.resolve_sensor_def("gpu_events")
    assert events.default_status == dg.DefaultSensorStatus.RUNNING
    assert {j.name for j in events.jobs} == {"gpu_ready_job", "gpu_alert_job"}
    guard = defs.resolve_sensor_def("together_rl_idle_guard_sensor")
    assert guard.default_status == dg.DefaultSensorStatus.STOPPED
    assert guard.minimum_interval_seconds == 30
    assert "dry run" not in (guard.description or "")
    schedule = defs.resolve_schedule_def("together_rl_spend_job_schedule")
    assert schedule.cron_schedule == "0 * * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    assert defs.resolve_job_def("together_rl_spend_job") is not None
    assert dg.AssetKey(["together", "rl_spend"]) in {s.key for s in defs.resolve_all_asset_specs()}


def test_guard_is_a_dry_run_unless_the_yaml_says_otherwise():
    defs = component_defs("idle_guard: {}\n")
    guard = defs.resolve_sensor_def("together_rl_idle_guard_sensor")
    assert "dry run" in (guard.description or "")
    assert [s.name for s in defs.sensors] == ["together_rl_idle_guard_sensor"]


def test_sections_left_out_or_disabled_add_nothing():
    for yaml in ("sync: {enabled: false}\n",
                 "sync: {enabled: false}\nidle_guard: {enabled: false}\nspend: {enabled: false}\n"
                 "model_resources: {enabled: false, routes: [{event_kinds: [resource_ready], "
                 "assets: '*', job_name: j}]}\n"):  # fmt: skip
        defs = defs_for(yaml)
        assert list(defs.sensors or []) == [] and list(defs.schedules or []) == []


def test_resource_routes_from_one_poll_and_guard_acts(monkeypatch):
    with RLSimulator(api_key=API_KEY) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("RL_TEST_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        world = sim.world
        defs = component_defs()
        events = SensorTicker(defs, "gpu_events", instance)
        assert events.tick().run_requests == []
        ready = world.create_model_resource(inactive_timeout=3600)
        kept = world.create_model_resource("keep/this-model", inactive_timeout=3600)
        failing = world.create_model_resource(status="PENDING")
        world.fail_model_resource(failing, message="no capacity")
        world.advance_clock(1)
        sim.requests.reset()
        got = {(r.job_name, r.run_key) for r in events.tick().run_requests}
        assert sim.requests.count() == 1
        assert got == {
            ("gpu_ready_job", f"resource_ready:{ready}"),
            ("gpu_ready_job", f"resource_ready:{kept}"),
            ("gpu_alert_job", f"resource_error:{failing}"),
        }

        # Both READY resources idle past 60 s; the deny list keeps one. Acting mode: a stop run.
        world.advance_clock(61)
        guard = SensorTicker(defs, "together_rl_idle_guard_sensor", instance)
        (request,) = guard.tick().run_requests
        assert request.run_key.startswith(f"idle_stop:{ready}:")
        op_config = request.run_config["ops"]["together_rl_idle_guard_stop"]["config"]
        assert op_config["dry_run"] is False and op_config["force"] is False
        result = defs.resolve_job_def("together_rl_idle_guard").execute_in_process(
            run_config=request.run_config, instance=instance, tags=request.tags
        )
        assert result.success
        assert world.model_resource(ready)["status"].rsplit("_", 1)[-1] in ("STOPPING", "STOPPED")
        assert world.billing_resources() == [kept]
        world.advance_clock(1)
        after = {(r.job_name, r.run_key) for r in events.tick().run_requests}
        assert ("gpu_alert_job", f"resource_stopped:{ready}") in after


def test_unknown_resource_kind_in_yaml_is_named():
    bad = YAML.replace("[resource_ready]", "[resource_redy]")
    with pytest.raises(Exception, match="Input should be 'resource_ready'"):
        dg.Definitions.validate_loadable(component_defs(bad))
