"""TogetherRLComponent without the dg CLI: YAML validated like defs.yaml, definitions built,
and the routed sensor it makes evaluated against the simulator like the daemon does."""

import textwrap

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_PARTITIONS, TogetherRLComponent
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.components.support import defs_for

API_KEY = "sk-component-CANARY-42"

YAML = textwrap.dedent(
    """
    resource:
      api_key_env: RL_TEST_KEY
    sessions:
      name: rl_events
      running: true
      filter: {display_name: "sweep-*"}
      options: {max_runs_per_tick: 10, page_size: 50}
      routes:
        - event_kinds: [checkpoint_registered]
          assets: 'key:"checkpoint_evaluation"'
          job_name: evaluate_checkpoint
        - event_kinds: [session_stopped, session_error, session_expired]
          assets: 'key:"session_report"'
          job_name: finished_session_report
    sync:
      cron_schedule: "0 * * * *"
    """
)


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS)
def checkpoint_evaluation() -> None: ...


@dg.asset
def session_report() -> None: ...


def component_defs(yaml: str = YAML) -> dg.Definitions:
    return defs_for(yaml, checkpoint_evaluation, session_report)


def test_yaml_builds_resource_checkpoint_asset_one_sensor_and_sync(monkeypatch):
    monkeypatch.delenv("RL_TEST_KEY", raising=False)
    defs = component_defs()
    dg.Definitions.validate_loadable(defs)
    sensor = defs.resolve_sensor_def("rl_events")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert {j.name for j in sensor.jobs} == {"evaluate_checkpoint", "finished_session_report"}
    assert defs.resolve_job_def("evaluate_checkpoint").partitions_def == CHECKPOINT_PARTITIONS
    assert defs.resolve_job_def("finished_session_report").partitions_def is None
    reconcile, schedule = sorted(defs.schedules, key=lambda s: s.name)  # the sync's two
    assert schedule.cron_schedule == "0 * * * *"
    assert (reconcile.cron_schedule, reconcile.job_name) == ("0 4 * * *", schedule.job_name)
    resource = defs.resources["together"]
    assert resource.api_key == dg.EnvVar("RL_TEST_KEY")
    assert dg.AssetKey(["together", "rl_inference_checkpoint"]) in {
        s.key for s in defs.resolve_all_asset_specs()
    }


def test_component_sensor_routes_both_families_from_one_poll(monkeypatch):
    with RLSimulator(api_key=API_KEY) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("RL_TEST_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        a = sim.world.create_session(display_name="sweep-a")
        b = sim.world.create_session(display_name="sweep-b")
        ignored = sim.world.create_session(display_name="other")
        sim.world.advance_clock(2)
        ticker = SensorTicker(component_defs(), "rl_events", instance)
        ticker.tick()
        sim.world.advance_clock(5)
        sim.world.advance_steps(a, 4)
        cid = sim.world.add_inference_checkpoint(a)
        sim.world.stop_session(b, immediate=True)
        sim.world.stop_session(ignored, immediate=True)
        sim.requests.reset()
        data = ticker.tick()
        assert sim.requests.count() <= 3
        got = {(r.job_name, r.run_key, r.partition_key) for r in data.run_requests}
        assert got == {
            (
                "evaluate_checkpoint",
                f"checkpoint_registered:{a}:{cid}",
                f"sweep-a/000004/{cid[:8]}",
            ),
            ("finished_session_report", f"session_stopped:{b}", None),
        }
        assert API_KEY not in repr(ticker.defs.resources["together"])


def test_checkpoint_route_to_unpartitioned_assets_fails_at_load():
    bad = YAML.replace('key:"checkpoint_evaluation"', 'key:"session_report"').replace(
        "assets: 'key:\"session_report\"'\n        job_name: finished_session_report",
        "assets: 'key:\"checkpoint_evaluation\"'\n        job_name: finished_session_report",
    )
    with pytest.raises(dg.DagsterInvalidDefinitionError) as info:
        dg.Definitions.validate_loadable(component_defs(bad))
    assert "CHECKPOINT_PARTITIONS" in f"{info.value} {info.value.__cause__}"


@pytest.mark.parametrize("route", [0, 1])
def test_a_selection_matching_no_asset_says_so_not_partitioning(route):
    """The asset's module was not loaded (e.g. a .py beside defs.yaml): the error names the
    empty selection, for checkpoint routes too (whose partition check would blame partitions)."""
    target = ['key:"checkpoint_evaluation"', 'key:"session_report"'][route]
    with pytest.raises(dg.DagsterInvalidDefinitionError) as info:
        dg.Definitions.validate_loadable(component_defs(YAML.replace(target, 'key:"missing"')))
    text = f"{info.value} {info.value.__cause__}"
    assert "selection 'key:\"missing\"' matches no asset" in text
    assert "not partitioned" not in text and "beside a defs.yaml" in text


@pytest.mark.parametrize(
    ("yaml", "match"),
    [
        (
            "sessions: {routes: [{event_kinds: [checkpoint_registred], assets: '*', job_name: j}]}",
            "Input should be 'checkpoint_created', 'checkpoint_registered'",
        ),
        (
            "sessions: {options: {page_size: 500}, routes: [{event_kinds: [session_error], "
            "assets: 'key:\"session_report\"', job_name: j}]}",
            "page_size",
        ),
        ("sessions: {nme: x}", "nme"),
    ],
)
def test_bad_yaml_is_named(yaml, match):
    with pytest.raises(Exception, match=match):
        dg.Definitions.validate_loadable(component_defs(yaml))


def test_empty_attributes_load_without_a_sensor():
    defs = dg.build_defs_for_component(component=TogetherRLComponent())
    dg.Definitions.validate_loadable(defs)
    assert list(defs.sensors or []) == []
    assert "together" in (defs.resources or {})


@pytest.mark.parametrize("module", ["example_repo.definitions", "example_repo.component_defs"])
def test_example_projects_load_without_our_warnings(module):
    """Fresh interpreter, every warning shown: none is raised by this library or the example
    (Dagster's own component loader still flags its beta code references, and its copy of a
    sensor whose job needs a resource flags the beta ``owners`` parameter)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = f"import {module} as m; m.defs.get_repository_def(); print('loaded')"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TOGETHER_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "loaded" in done.stdout, done.stderr[-3000:]
    warning_lines = [line for line in done.stderr.splitlines() if "Warning:" in line]
    assert not [line for line in warning_lines if "rl_sessions_dagster" in line]
    assert not [line for line in warning_lines if "example_repo" in line]


@pytest.mark.parametrize("module", ["example_repo.definitions", "example_repo.component_defs"])
def test_example_projects_run_their_sync_schedule(module, monkeypatch):
    """The example talks to the simulator: its sessions table fills without a switch in the UI."""
    import importlib

    monkeypatch.setenv("TOGETHER_API_KEY", "k")
    defs = importlib.import_module(module).defs
    sync = [s for s in defs.schedules or [] if "rl_sessions_table" in s.job_name]
    assert sync and {s.default_status for s in sync} == {dg.DefaultScheduleStatus.RUNNING}


def undescribed(schema: dict) -> list[str]:
    """``Section.field`` for every property of ``schema`` without a description."""
    objects = [("(top)", schema), *schema.get("$defs", {}).items()]
    return [
        f"{owner}.{name}"
        for owner, obj in objects
        for name, prop in obj.get("properties", {}).items()
        if not prop.get("description")
    ]


def test_every_field_of_every_section_is_described_in_the_schema():
    """What `dg utils inspect-component` prints and `dg check yaml` validates against."""
    schema = TogetherRLComponent.get_model_cls().model_json_schema()
    assert undescribed(schema) == []
    sensor = schema["$defs"]["SessionSensorSectionModel"]["properties"]
    assert sensor["minimum_interval_seconds"]["else"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 86400,
    }
    sensor_prop = schema["properties"]["sessions"]
    assert sensor_prop["else"] == {"$ref": "#/$defs/SessionSensorSectionModel"}  # keeps paths
    assert {} in sensor_prop["anyOf"]  # the anyOf kept for readers never fails


def test_yaml_event_kind_names_are_the_enums():
    import typing

    from rl_sessions_dagster.components.sensors import EventKindName, ResourceEventKindName
    from rl_sessions_dagster.core import EventKind
    from rl_sessions_dagster.core.events import ResourceEventKind

    assert set(typing.get_args(EventKindName)) == {k.value for k in EventKind}
    assert set(typing.get_args(ResourceEventKindName)) == {k.value for k in ResourceEventKind}


def test_templates_still_resolve_in_bounded_fields(monkeypatch):
    monkeypatch.setenv("RL_TEST_INTERVAL", "7")
    component = TogetherRLComponent.resolve_from_yaml(
        'sessions: {minimum_interval_seconds: "{{ env.RL_TEST_INTERVAL }}"}\n'
        'evaluation: {items: [], concurrency: "{{ env.RL_TEST_INTERVAL }}", max_calls: null}\n'
    )
    assert component.sessions.minimum_interval_seconds == 7
    assert component.evaluation is not None and component.evaluation.concurrency == 7
    monkeypatch.setenv("RL_TEST_INTERVAL", "0")
    with pytest.raises(Exception, match="greater than or equal to 1"):
        TogetherRLComponent.resolve_from_yaml(
            'sessions: {minimum_interval_seconds: "{{ env.RL_TEST_INTERVAL }}"}\n'
        )


def test_resource_section_is_every_field_of_the_resource():
    """Derived from TogetherRLResource (one resolver, nothing copied): each field by its name,
    each secret by the environment variable holding it."""
    from rl_sessions_dagster import TogetherRLResource

    schema = TogetherRLComponent.get_model_cls().model_json_schema()
    fields = set(schema["$defs"]["ResourceSectionModel"]["properties"])
    assert fields == {
        "api_key_env", "database_url_env",
        *(set(TogetherRLResource.model_fields) - {"api_key", "database_url"}),
    }  # fmt: skip
    component = TogetherRLComponent.resolve_from_yaml(
        "resource: {api_key_env: K, database_url_env: DB, request_timeout: 5, max_attempts: 2,"
        " backoff_initial: 0.1, backoff_max: 1, backoff_jitter: 0, retry_after_cap: 3,"
        " call_deadline: 60}\n"
    )
    r = component.resource
    assert isinstance(r, TogetherRLResource)
    assert (r.api_key, r.database_url) == (dg.EnvVar("K"), dg.EnvVar("DB"))
    assert (r.request_timeout, r.max_attempts, r.backoff_initial, r.backoff_max) == (5, 2, 0.1, 1)
    assert (r.backoff_jitter, r.retry_after_cap, r.call_deadline) == (0, 3, 60)
    assert TogetherRLComponent().resource.api_key == dg.EnvVar("TOGETHER_API_KEY")
    with pytest.raises(Exception, match="max_attempts"):
        TogetherRLComponent.resolve_from_yaml("resource: {max_attempts: 0}\n")


def test_yaml_filter_excludes_a_session_born_between_ticks(monkeypatch):
    """``filter:`` in YAML holds on the checkpoint-list path too (#31): a session of another
    W&B group, born between two ticks with a registered checkpoint, gets no evaluation."""
    yaml = YAML.replace('filter: {display_name: "sweep-*"}', "filter: {wandb_group: grid-a}")
    with RLSimulator(api_key=API_KEY) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("RL_TEST_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        ticker = SensorTicker(component_defs(yaml), "rl_events", instance)
        ticker.tick()
        sim.world.advance_clock(5)
        ids = {}
        for group in ("grid-a", "grid-b"):
            sid = sim.world.create_session(wandb={"project": "p", "group": group})
            sim.world.advance_steps(sid, 10)
            ids[group] = (sid, sim.world.add_inference_checkpoint(sid))
            sim.world.stop_session(sid, immediate=True)
        sim.world.advance_clock(2)
        keys = sorted(r.run_key for r in ticker.tick().run_requests)
        (sid_a, cid_a) = ids["grid-a"]
        assert keys == [f"checkpoint_registered:{sid_a}:{cid_a}", f"session_stopped:{sid_a}"]
