"""The ``report:`` and ``champion:`` sections of TogetherRLComponent: YAML validated like
defs.yaml, terminal events routed to the report, the champion asset, sensor and on_change job
built, and a finished session reported end to end (sensor tick, then the run it requests)."""

import re
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLComponent
from rl_sessions_dagster.assets.report import REPORT_ASSET_KEY
from rl_sessions_dagster.partitions import CHAMPION_ASSET_KEY, SWEEP_PARTITIONS
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.components.support import defs_for

API_KEY = "sk-component-report-CANARY-19"
YAML = textwrap.dedent(
    """
    resource: {api_key_env: RL_REPORT_TEST_KEY, max_attempts: 2}
    sessions: {name: rl_events, running: true}
    sync: {enabled: false}
    evaluation:
      items: [{a: 12, b: 30, expected: 42}]
      prompt_template: "What is {a} + {b}?"
      graders: [{type: numeric}]
    report: {job_name: finished_session_report}
    champion:
      direction: higher
      min_candidates: 2
      running: true
      on_change: {assets: 'key:"deploy_champion"', job_name: deploy}
    """
)


@dg.asset
def deploy_champion() -> None: ...


def component_defs(yaml: str = YAML) -> dg.Definitions:
    return defs_for(yaml, deploy_champion)


def test_sections_build_the_report_route_and_the_champion(monkeypatch):
    monkeypatch.delenv("RL_REPORT_TEST_KEY", raising=False)
    defs = component_defs()
    dg.Definitions.validate_loadable(defs)
    assert {j.name for j in defs.resolve_sensor_def("rl_events").jobs} == {
        "evaluate_checkpoint",
        "finished_session_report",
    }
    assert defs.resolve_job_def("finished_session_report").partitions_def is None
    spec = defs.resolve_assets_def(CHAMPION_ASSET_KEY)
    assert spec.partitions_def == SWEEP_PARTITIONS
    sensor = defs.resolve_sensor_def("together_rl_champion")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    on_change = defs.resolve_sensor_def("together_rl_champion_on_change")
    assert on_change.default_status == dg.DefaultSensorStatus.RUNNING
    assert [j.name for j in on_change.jobs] == ["deploy"]
    # the champion's own sensor targets it, so the asset's page lists it
    assert sensor.asset_selection.resolve(defs.resolve_asset_graph()) == {CHAMPION_ASSET_KEY}
    only = component_defs("report: {}\nchampion: {enabled: false}\nsync: {enabled: false}")
    keys = {s.key for s in only.resolve_all_asset_specs()}
    assert REPORT_ASSET_KEY in keys and CHAMPION_ASSET_KEY not in keys


@pytest.mark.parametrize(
    ("yaml", "match"),
    [
        (
            "sessions: {routes: [{event_kinds: [session_error], assets: '*', job_name: j}]}\n"
            "report: {}",
            "already routed",
        ),
        ("report: {event_kinds: [session_stoped]}", "session_stoped"),
        ("champion: {direction: up}", "direction"),
        ("champion: {min_candidates: 0}", "min_candidates"),
        ("champion: {metrc: loss}", "metrc"),
    ],
)
def test_bad_sections_are_named(yaml, match):
    with pytest.raises(Exception, match=match):
        dg.Definitions.validate_loadable(component_defs(yaml))


def test_a_finished_session_is_routed_and_reported(monkeypatch):
    with RLSimulator(api_key=API_KEY, seed=4) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("RL_REPORT_TEST_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        sid = sim.world.create_session(display_name="sweep-r")
        defs = component_defs()
        ticker = SensorTicker(defs, "rl_events", instance)
        ticker.tick()
        sim.world.advance_steps(sid, 12)
        sim.world.stop_session(sid, immediate=True)
        (request,) = ticker.tick().run_requests
        assert request.job_name == "finished_session_report"
        assert request.tags["together/session_id"] == sid
        result = defs.resolve_job_def("finished_session_report").execute_in_process(
            instance=instance, tags=request.tags
        )
        assert result.success
        (mat,) = result.asset_materializations_for_node("together__session_report")
        assert mat.metadata["status"].value == "STOPPED" and mat.metadata["steps"].value == 12
        assert "not recorded" in mat.metadata["report"].value


def test_docs_report_and_champion_examples_load():
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page.split("### The report and the champion")[1].split("\n### ")[0]
    yamls = re.findall(r"```yaml\nattributes:\n(.*?)```", section, re.S)
    assert len(yamls) == 2
    for block in yamls:
        component = TogetherRLComponent.resolve_from_yaml(textwrap.dedent(block))
        dg.Definitions.validate_loadable(
            dg.Definitions.merge(
                dg.build_defs_for_component(component=component),
                dg.Definitions(assets=[deploy_champion]),
            )
        )
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(compile(code, "docs-champion", "exec"), namespace)
    defs = dg.Definitions.merge(
        namespace["champion_defs"],
        dg.Definitions(assets=[deploy_champion]),
    )
    dg.Definitions.validate_loadable(defs)
    assert len(namespace["baselines"]) == 2


def test_the_report_default_kinds_are_the_terminal_events():
    from rl_sessions_dagster.components.report import ReportSection
    from rl_sessions_dagster.core.events import TERMINAL_EVENTS

    assert set(ReportSection().event_kinds) == {k.value for k in TERMINAL_EVENTS}
