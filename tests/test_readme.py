"""The README's code blocks are real code: the quick start loads, the hook example runs."""

import re
from pathlib import Path

import dagster as dg

from rl_sessions_dagster.testing import RLSimulator

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_top_has_the_two_commands():
    head = README.split("## What the demo shows")[0]
    assert "bash scripts/demo.sh" in head and "bash scripts/test.sh" in head
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_quick_start_definitions_load_without_calling_the_api(monkeypatch):
    (quick_start,) = [b for b in BLOCKS if "defs = dg.Definitions(" in b]
    with RLSimulator(api_key="sim-test-key-0123456789abcdef") as sim:
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        namespace: dict = {}
        exec(compile(quick_start, "README-quick-start", "exec"), namespace)
        dg.Definitions.validate_loadable(namespace["defs"])
        assert sim.requests.count() == 0


def test_run_request_hook_example_runs():
    (hook,) = [b for b in BLOCKS if "def shape(event, request)" in b]
    namespace: dict = {}

    @dg.op
    def report() -> None:
        pass

    @dg.job
    def report_job() -> None:
        report()

    namespace["report_job"] = report_job
    exec(compile(hook, "README-hook", "exec"), namespace)
    assert namespace["reports"].run_request_fn is namespace["shape"]
    from rl_sessions_dagster.api.models import TrainingSession
    from rl_sessions_dagster.core import EventKind, SessionEvent

    event = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="x"))
    shaped = namespace["shape"](event, dg.RunRequest(run_key="k", tags={"a": "b"}))
    assert shaped.tags["team"] == "post-training" and shaped.run_config
    debug = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="debug-1"))
    assert namespace["shape"](debug, dg.RunRequest(run_key="k")) is None


def test_routed_sensor_example_loads_with_the_quick_start(monkeypatch):
    (quick_start,) = [b for b in BLOCKS if "defs = dg.Definitions(" in b]
    (routed,) = [b for b in BLOCKS if "rl_events = build_session_sensor(" in b]
    monkeypatch.setenv("TOGETHER_API_KEY", "k")
    namespace: dict = {}
    exec(compile(quick_start, "README-quick-start", "exec"), namespace)
    exec(compile(routed, "README-routed", "exec"), namespace)
    sensor = namespace["rl_events"]
    defs = dg.Definitions.merge(namespace["defs"], dg.Definitions(sensors=[sensor]))
    dg.Definitions.validate_loadable(defs)
    assert {j.name for j in sensor.jobs} == {"evaluation_job", "report_job"}


def test_component_yaml_example_resolves():
    from rl_sessions_dagster import TogetherRLComponent

    (block,) = re.findall(
        r"```yaml\n(type: rl_sessions_dagster.TogetherRLComponent.*?)```", README, re.S
    )
    attributes = block.split("attributes:\n", 1)[1]
    component = TogetherRLComponent.resolve_from_yaml(
        "\n".join(line[2:] for line in attributes.splitlines())
    )
    assert [r.job_name for r in component.sessions.routes] == [
        "evaluate_checkpoint",
        "finished_session_report",
    ]
    assert component.sync.db_path == "/data/together_rl_sync.sqlite"


def test_gpu_example_builds_loadable_definitions():
    """The GPU section's block: the sensor with routes, the training op, guard and spend."""
    from rl_sessions_dagster import TogetherRLResource

    (block,) = [b for b in BLOCKS if "build_idle_guard(" in b]

    @dg.op
    def noop() -> None:
        pass

    @dg.job
    def warm_up_job() -> None:
        noop()

    @dg.job
    def page_someone_job() -> None:
        noop()

    namespace: dict = {"warm_up_job": warm_up_job, "page_someone_job": page_someone_job}
    exec(compile(block, "README-gpus", "exec"), namespace)

    @dg.job
    def training_job() -> None:
        namespace["training"]()

    defs = dg.Definitions(
        assets=[namespace["spend"]],
        jobs=[warm_up_job, page_someone_job, namespace["guard_job"], training_job],
        sensors=[namespace["gpu_events"], namespace["guard_sensor"]],
        resources={"together": TogetherRLResource(api_key="sim-test-key-0123456789abcdef")},
    )
    dg.Definitions.validate_loadable(defs)
    sensor = defs.resolve_sensor_def("together_rl_model_resource_sensor")
    assert {j.name for j in sensor.jobs} == {"warm_up_job", "page_someone_job"}


def test_evaluation_examples_load(monkeypatch):
    """The Python block builds the asset and its sensor; the YAML block resolves."""
    from rl_sessions_dagster import TogetherRLComponent, TogetherRLResource

    (block,) = [b for b in BLOCKS if "build_evaluation_asset(" in b]
    namespace: dict = {}
    exec(compile(block, "README-evaluation", "exec"), namespace)
    defs = dg.Definitions(
        assets=[namespace["evaluation"]],
        jobs=[namespace["evaluation_job"]],
        sensors=[namespace["evaluation_sensor"]],
        resources={"together": TogetherRLResource()},
    )
    dg.Definitions.validate_loadable(defs)
    (yaml_block,) = re.findall(r"```yaml\n(# defs/together_rl/defs.yaml.*?)```", README, re.S)
    section = yaml_block.split("attributes:\n", 1)[1].replace("dataset: eval.jsonl", "items: []")
    component = TogetherRLComponent.resolve_from_yaml(
        "\n".join(line[2:] for line in section.splitlines())
    )
    assert component.evaluation is not None and component.evaluation.concurrency == 16


def _yaml_block(first_line: str) -> str:
    (block,) = [
        b for b in re.findall(r"```yaml\n(.*?)```", README, re.S) if b.startswith(first_line)
    ]
    return block


def _attributes(block: str) -> str:
    attributes = block.split("attributes:\n", 1)[1]
    return "\n".join(line[2:] for line in attributes.splitlines())


def test_yaml_only_quick_start_resolves_and_its_messages_are_real():
    """The YAML-only quick start resolves; the dg messages it quotes are this version's
    (tests/components/test_bad_yaml_dg.py runs dg on the same mistakes)."""
    from rl_sessions_dagster import TogetherRLComponent

    block = _yaml_block("# src/my_rl/defs/together_rl/defs.yaml\n")
    component = TogetherRLComponent.resolve_from_yaml(_attributes(block))
    assert component.sessions.running and component.evaluation is not None
    assert component.evaluation.dataset == "eval.jsonl"
    assert [g.type for g in component.evaluation.graders] == ["numeric"]
    for quoted in (
        "Additional properties are not allowed ('minimum_interval_secs' was unexpected)",
        "'checkpoint_registred' is not one of ['checkpoint_created', 'checkpoint_registered'",
        "-5 is less than the minimum of 1",
        "'key:\"report\"' matches no asset",
    ):
        assert quoted in README


def test_announce_only_example_feeds_the_eager_asset(monkeypatch):
    """The announce-only YAML and the defs module beside it: one tick announces a checkpoint,
    automation requests the README's asset for that partition, and materializing it reads
    the checkpoint id back from the recorded event."""
    from rl_sessions_dagster import TogetherRLComponent

    component = TogetherRLComponent.resolve_from_yaml(
        _attributes(_yaml_block("# src/my_rl/defs/together_rl/defs.yaml (announce only)\n"))
    )
    (module,) = [b for b in BLOCKS if b.startswith("# src/my_rl/defs/my_evaluation.py")]
    namespace: dict = {}
    exec(compile(module, "README-announce", "exec"), namespace)
    asset = namespace["my_evaluation"]
    key = "sim-readme-announce-0123456789abcdef"
    with RLSimulator(api_key=key) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("TOGETHER_API_KEY", key)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        defs = dg.Definitions.merge(
            dg.build_defs_for_component(component=component), dg.Definitions(assets=[asset])
        )
        from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

        ticker = SensorTicker(defs, "together_rl_events", instance)
        sid = sim.world.create_session(display_name="sweep-a")
        ticker.tick()
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        sim.world.advance_steps(sid, 20)
        sim.world.add_inference_checkpoint(sid)
        data = ticker.tick()
        for request in data.dynamic_partitions_requests:
            instance.add_dynamic_partitions(
                request.partitions_def_name, list(request.partition_keys)
            )
        for event in data.asset_events:
            instance.report_runless_asset_event(event)
        after = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=before.cursor
        )
        (partition,) = after.get_requested_partitions(asset.key)
        assert partition is not None and partition.startswith("sweep-a/000020/")
        result = dg.materialize(
            [asset],
            partition_key=partition,
            instance=instance,
            resources={"together": defs.resources["together"]},
        )
        assert result.success
        (mat,) = result.asset_materializations_for_node("my_evaluation")
        assert mat.metadata["step"].value == 20
