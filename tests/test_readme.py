"""The README and the docs/ pages are real: their Python runs, their YAML loads and validates
against the Component's schema, the configuration reference is generated from that schema, and
their links and the README's layout match the repository."""

import importlib.util
import json
import re

import dagster as dg
import jsonschema
import yaml

from rl_sessions_dagster import TogetherRLComponent
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.docs_support import DOCS, KEY, PAGES, README, ROOT, attributes, block, blocks, run
from tests.docs_support import schema as _schema


def quick_start() -> dict:
    return run(block(README, "defs = dg.Definitions("), "README-python")


# --- the README -----------------------------------------------------------------------------


def test_readme_top_has_the_commands_and_ci_runs_the_test_command():
    head = README.split("## Install")[0]
    assert "bash scripts/demo.sh" in head and "bash scripts/test.sh" in head
    development = README.split("## Development")[1].split("\n## ")[0]
    assert "bash scripts/test.sh" in development and "what CI runs" in development
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_readme_is_short():
    assert len(README.splitlines()) <= 400


def test_yaml_quick_start_builds_and_its_messages_are_real(tmp_path, monkeypatch):
    """The one complete defs.yaml loads as dg loads it (its dataset beside it), builds what the
    README lists, and the dg messages it quotes are this version's
    (tests/components/test_bad_yaml_dg.py runs dg on the same mistakes)."""
    text = block(README, "# src/my_rl/defs/together_rl/defs.yaml\n", "yaml")
    assert text.count("type: rl_sessions_dagster.TogetherRLComponent") == 1
    component = TogetherRLComponent.resolve_from_yaml(attributes(text))
    assert component.sessions.running and component.sessions.filter.display_name == "sweep-*"
    assert component.evaluation is not None and component.evaluation.dataset == "eval.jsonl"
    assert [g.type for g in component.evaluation.graders] == ["numeric"]
    assert component.report is not None and component.champion is not None
    assert component.sync.cron_schedule == "*/15 * * * *"
    (tmp_path / "eval.jsonl").write_text(
        "\n".join(json.dumps({"a": a, "b": 3, "expected": a + 3}) for a in range(5)) + "\n"
    )
    monkeypatch.chdir(tmp_path)  # a relative dataset is read from the component's folder
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    defs = dg.build_defs_for_component(component=component)
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    built = re.findall(r"^\* `(together/\w+)`", README, re.M)
    assert len(built) == 5 and set(built) <= set(groups)
    assert set(groups.values()) == {"together_rl"}  # "all in the asset group together_rl"
    assert {j.name for j in defs.resolve_sensor_def("together_rl_events").jobs} == {
        "evaluate_checkpoint",
        "finished_session_report",
    }
    # What it declares runs: every sensor and schedule of the quick start starts RUNNING.
    assert {s.name: s.default_status.value for s in defs.sensors or []} == dict.fromkeys(
        ["together_rl_events", "together_rl_champion"], "RUNNING"
    )
    schedules = {s.name: s.default_status.value for s in defs.schedules or []}
    assert schedules and set(schedules.values()) == {"RUNNING"}, schedules
    for quoted in (
        "Additional properties are not allowed ('minimum_interval_secs' was unexpected)",
        "'checkpoint_registred' is not one of ['checkpoint_created', 'checkpoint_registered'",
        "-5 is less than the minimum of 1",
        "'key:\"report\"' matches no asset",
    ):
        assert quoted in README


def test_python_quick_start_loads_without_calling_the_api(monkeypatch):
    with RLSimulator(api_key=KEY) as sim:
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        defs = quick_start()["defs"]
        dg.Definitions.validate_loadable(defs)
        sensor = defs.resolve_sensor_def("together_rl_events")
        assert {j.name for j in sensor.jobs} == {"evaluation_job", "report_job"}
        assert sim.requests.count() == 0


def test_testing_example_ticks_the_quick_start_sensor():
    """The README's test: the quick start's sensor against the simulator, one run requested
    for the new checkpoint through a transient 503."""
    namespace = quick_start()
    code = block(README, "SensorTicker(defs")
    run(code, "README-testing", namespace)
    request = namespace["request"]
    assert request.tags["together/event"] == "checkpoint_registered"
    assert request.partition_key.startswith("sweep-a/")
    # the 503 was served, and retried within the tick
    assert namespace["sim"].requests.count("GET", "/v1/rl/training-sessions", status=503) == 1


def test_announce_only_example_feeds_the_eager_asset(monkeypatch):
    """The announce-only YAML and the defs module beside it: one tick announces a checkpoint,
    automation requests the README's asset for that partition, and materializing it reads
    the checkpoint id back from the recorded event."""
    component = TogetherRLComponent.resolve_from_yaml(
        attributes(
            block(README, "# src/my_rl/defs/together_rl/defs.yaml (announce only)\n", "yaml")
        )
    )
    module = block(README, "# src/my_rl/defs/my_evaluation.py")
    asset = run(module, "README-announce")["my_evaluation"]
    with RLSimulator(api_key=KEY) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("TOGETHER_API_KEY", KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        defs = dg.Definitions.merge(
            dg.build_defs_for_component(component=component), dg.Definitions(assets=[asset])
        )
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


def test_layout_matches_the_package_tree():
    """One line per subpackage of rl_sessions_dagster, and every top-level folder named exists."""
    layout = README.split("## Layout")[1]
    (tree,) = re.findall(r"```\n(.*?)```", layout, re.S)
    lines = tree.splitlines()
    assert lines[0] == "rl_sessions_dagster/"
    listed = [m.group(1) for line in lines if (m := re.match(r"  (\w+)/\s", line))]
    package = ROOT / "rl_sessions_dagster"
    subpackages = sorted(p.parent.name for p in package.glob("*/__init__.py"))
    assert sorted(listed) == subpackages
    assert len(listed) == len(set(listed))
    for line in lines[1:]:
        if m := re.match(r"(\w+)/\s", line):
            assert (ROOT / m.group(1)).is_dir(), line


# --- the docs pages -------------------------------------------------------------------------


def test_every_page_is_linked_from_the_readme():
    for name in PAGES:
        if name.startswith("docs/"):
            assert f"]({name})" in README, name


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a Markdown page (code blocks aside)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    found = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = heading.strip().lower().replace(" ", "-")
        found.add("".join(c for c in slug if c.isalnum() or c in "-_"))
    return found


def test_links_resolve():
    """Every relative link of the README, the docs and the CHANGELOG points at a file that
    exists, and every #anchor into a Markdown page at one of its headings."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for name, text in {**PAGES, "CHANGELOG.md": changelog}.items():
        base = (ROOT / name).parent
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (base / path).resolve() if path else ROOT / name
            assert file.exists(), f"{name}: {target}"
            if anchor and file.suffix == ".md":
                assert anchor in _anchors(file.read_text()), f"{name}: {target}"


def test_every_defs_yaml_block_validates_against_the_component_schema():
    """Each YAML block of the README and the docs that holds the Component's attributes is
    what `dg check yaml` accepts: the same JSON schema, every field named there exists."""
    validator = jsonschema.validators.validator_for(_schema())(_schema())
    checked = 0
    for name, text in PAGES.items():
        for body in blocks(text, "yaml"):
            document = yaml.safe_load(body)
            if not isinstance(document, dict) or "attributes" not in document:
                continue
            if "type" in document:
                assert document["type"] == "rl_sessions_dagster.TogetherRLComponent", name
            errors = [e.message for e in validator.iter_errors(document["attributes"])]
            assert not errors, f"{name}: {errors}"
            checked += 1
    assert checked >= 6


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_config_reference", DOCS / "gen_config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_the_schema():
    """docs/configuration.md's reference is what the generator makes of the current schema
    (run `python docs/gen_config_reference.py` after changing a section), and it names every
    section and field of that schema."""
    gen = _generator()
    page = (DOCS / "configuration.md").read_text()
    assert gen.page(page, gen.render()) == page, "stale: run python docs/gen_config_reference.py"
    assert gen.main(["--check"]) == 0
    schema = _schema()
    reference = page.split(gen.BEGIN)[1].split(gen.END)[0]
    models = [schema, *schema["$defs"].values()]
    for model in models:
        for field, prop in model.get("properties", {}).items():
            assert f"| `{field}` |" in reference, field
            if "description" in prop:
                assert prop["description"].replace("|", "\\|") in reference, field
    for section in schema["properties"]:
        assert f"\n## {section}\n" in reference or section == "resource_key", section


def test_the_reference_follows_the_schema_it_is_given():
    """The generator reads the schema, not a copy: a field added there appears on the page."""
    gen = _generator()
    schema = _schema()
    schema["$defs"]["SyncConfigModel"]["properties"]["new_knob"] = {
        "default": 7,
        "type": "integer",
        "minimum": 1,
        "description": "A knob added to the schema.",
    }
    assert "| `new_knob` | `7` | int ≥ 1 | A knob added to the schema. |" in gen.render(schema)
