"""The docs/ pages are real: their Python runs and their YAML loads."""

import re

import dagster as dg
import jsonschema
import yaml

from rl_sessions_dagster import TogetherRLComponent, TogetherRLResource
from tests.docs_support import KEY, PAGES, attributes, block, run
from tests.docs_support import schema as _schema


def test_run_request_hook_example_runs():
    code = block(PAGES["docs/configuration.md"], "def shape(event, request)")

    @dg.op
    def report() -> None:
        pass

    @dg.job
    def report_job() -> None:
        report()

    namespace = run(code, "docs-hook", {"report_job": report_job})
    assert namespace["reports"].run_request_fn is namespace["shape"]
    from rl_sessions_dagster.api.models import TrainingSession
    from rl_sessions_dagster.core import EventKind, SessionEvent

    event = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="x"))
    shaped = namespace["shape"](event, dg.RunRequest(run_key="k", tags={"a": "b"}))
    assert shaped.tags["team"] == "post-training" and shaped.run_config
    debug = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="debug-1"))
    assert namespace["shape"](debug, dg.RunRequest(run_key="k")) is None


def test_routes_yaml_example_resolves():
    text = block(PAGES["docs/configuration.md"], "routes:", "yaml")
    component = TogetherRLComponent.resolve_from_yaml(attributes(text))
    assert [r.job_name for r in component.sessions.routes] == [
        "evaluate_checkpoint",
        "finished_session_report",
    ]
    assert component.sync.db_path == "/data/together_rl_sync.sqlite"


def test_evaluation_example_loads():
    namespace = run(block(PAGES["docs/configuration.md"], "build_evaluation_asset("), "docs-eval")
    defs = dg.Definitions(
        assets=[namespace["evaluation"]],
        jobs=[namespace["evaluation_job"]],
        sensors=[namespace["evaluation_sensor"]],
        resources={"together": TogetherRLResource()},
    )
    dg.Definitions.validate_loadable(defs)


def test_sync_example_loads():
    namespace = run(block(PAGES["docs/configuration.md"], "build_session_sync_asset("), "docs-sync")
    dg.Definitions.validate_loadable(
        dg.Definitions(
            assets=[namespace["sessions_table"]],
            jobs=[namespace["sync_job"]],
            schedules=[namespace["sync_schedule"]],
            resources={"together": TogetherRLResource()},
        )
    )


def test_gpu_example_builds_loadable_definitions():
    """docs/gpus.md's block: the sensor with routes, the training op, guard and spend."""
    code = block(PAGES["docs/gpus.md"], "build_idle_guard(")

    @dg.op
    def noop() -> None:
        pass

    @dg.job
    def warm_up_job() -> None:
        noop()

    @dg.job
    def page_someone_job() -> None:
        noop()

    namespace = run(
        code, "docs-gpus", {"warm_up_job": warm_up_job, "page_someone_job": page_someone_job}
    )

    @dg.job
    def training_job() -> None:
        namespace["training"]()

    defs = dg.Definitions(
        assets=[namespace["spend"]],
        jobs=[warm_up_job, page_someone_job, namespace["guard_job"], training_job],
        sensors=[namespace["gpu_events"], namespace["guard_sensor"]],
        resources={"together": TogetherRLResource(api_key=KEY)},
    )
    dg.Definitions.validate_loadable(defs)
    sensor = defs.resolve_sensor_def("together_rl_model_resource_sensor")
    assert {j.name for j in sensor.jobs} == {"warm_up_job", "page_someone_job"}


def test_simulator_example_runs():
    """docs/testing.md's block: a world, a fault, the client retrying it, the request log."""
    run(block(PAGES["docs/testing.md"], "client.list_sessions()"), "docs-testing")


def test_the_scaffold_loads_as_is_and_its_stubs_are_the_sections(monkeypatch):
    """`dg scaffold defs` writes a file that builds unchanged; its commented `report:` and
    `champion:` stubs (and the others) are valid sections once uncommented."""
    from rl_sessions_dagster.components.together_rl import SCAFFOLD_YAML

    text = SCAFFOLD_YAML.replace("{type_name}", "rl_sessions_dagster.TogetherRLComponent")
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    component = TogetherRLComponent.resolve_from_yaml(attributes(text))
    dg.Definitions.validate_loadable(dg.build_defs_for_component(component=component))
    assert component.report is None and component.champion is None
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        body = line[4:] if line.startswith("  # ") else None
        if body is not None and (m := re.match(r"(\w+):", body)):
            current = m.group(1)
            sections[current] = [body]
        elif body is not None and current and body.startswith("  "):
            sections[current].append(body)
        else:
            current = None
    assert {"report", "champion", "spend", "evaluation", "idle_guard"} <= set(sections)
    document = yaml.safe_load("\n".join(line for body in sections.values() for line in body))
    validator = jsonschema.validators.validator_for(_schema())(_schema())
    assert not [e.message for e in validator.iter_errors(document)]
    assert document["champion"]["running"] is False and "on_change" not in document["champion"]
    assert set(document) == set(sections)


def test_a_declared_spend_schedule_runs_by_default():
    """Spend only reads the API: a `spend:` section's schedule starts RUNNING unless it says
    `running: false` (the sessions sensor, which starts paid runs, stays STOPPED by default)."""
    component = TogetherRLComponent.resolve_from_yaml('spend: {cron_schedule: "0 * * * *"}\n')
    defs = dg.build_defs_for_component(component=component)
    schedule = defs.resolve_schedule_def("together_rl_spend_job_schedule")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    off = TogetherRLComponent.resolve_from_yaml("spend: {running: false}\n")
    schedule = dg.build_defs_for_component(component=off).resolve_schedule_def(
        "together_rl_spend_job_schedule"
    )
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
