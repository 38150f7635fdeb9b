"""The ``evaluation:`` section of TogetherRLComponent: YAML validated like defs.yaml, the asset
and its check built, checkpoint events routed to it, and one checkpoint evaluated end to end
(sensor tick, then the run it requests) against the simulator."""

import json
import textwrap

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_PARTITIONS
from rl_sessions_dagster.evaluation.dataset import DatasetError
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.components.support import defs_for

API_KEY = "sk-component-eval-CANARY-77"
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])

YAML = textwrap.dedent(
    """
    resource:
      api_key_env: RL_EVAL_TEST_KEY
      max_attempts: 2
    sessions:
      name: rl_events
      running: true
      routes:
        - event_kinds: [session_stopped]
          assets: 'key:"session_report"'
          job_name: finished_session_report
    sync:
      enabled: false
    evaluation:
      items:
        - {a: 12, b: 30, expected: 42}
        - {a: 7, b: 8, expected: 15}
        - {id: chat, messages: [{role: user, content: "What is 2 + 2?"}], expected: 4}
      prompt_template: "What is {a} + {b}?"
      graders:
        - type: numeric
        - {type: contains, name: mentions}
      concurrency: 2
      tolerance: 0.1
      price_prompt_per_million: 0.5
    """
)


@dg.asset
def session_report() -> None: ...


def component_defs(yaml: str = YAML) -> dg.Definitions:
    return defs_for(yaml, session_report)


def test_section_builds_the_asset_check_and_route(monkeypatch):
    monkeypatch.delenv("RL_EVAL_TEST_KEY", raising=False)
    defs = component_defs()
    dg.Definitions.validate_loadable(defs)
    asset = defs.resolve_assets_def(EVAL_KEY)
    assert asset.partitions_def == CHECKPOINT_PARTITIONS
    assert {c.name for c in asset.check_specs} == {"score_not_dropping"}
    assert dg.AssetKey(["together", "rl_inference_checkpoint"]) in asset.dependency_keys
    job = defs.resolve_job_def("evaluate_checkpoint")
    assert job.partitions_def == CHECKPOINT_PARTITIONS
    assert {j.name for j in defs.resolve_sensor_def("rl_events").jobs} == {
        "evaluate_checkpoint",
        "finished_session_report",
    }


def test_a_registered_checkpoint_is_routed_and_evaluated(monkeypatch):
    with RLSimulator(api_key=API_KEY, seed=4) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("RL_EVAL_TEST_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        sid = sim.world.create_session(display_name="sweep-x")
        defs = component_defs()
        ticker = SensorTicker(defs, "rl_events", instance)
        ticker.tick()
        sim.world.advance_steps(sid, 20)
        cid = sim.world.add_inference_checkpoint(sid)
        (request,) = ticker.tick().run_requests
        assert request.job_name == "evaluate_checkpoint"
        assert request.partition_key == f"sweep-x/000020/{cid[:8]}"
        instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [request.partition_key])
        result = defs.resolve_job_def("evaluate_checkpoint").execute_in_process(
            instance=instance, partition_key=request.partition_key, tags=request.tags
        )
        assert result.success
        (mat,) = result.asset_materializations_for_node("together__checkpoint_evaluation")
        meta = mat.metadata
        assert meta["answers"].value == 3 and meta["checkpoint_id"].value == cid
        assert "score [mentions]" in meta and "score sweep-x" in meta
        assert API_KEY not in json.dumps({k: str(v) for k, v in meta.items()})


def test_dataset_file_errors_fail_at_load_naming_the_line(tmp_path):
    bad = tmp_path / "eval.jsonl"
    bad.write_text('{"prompt": "1 + 1", "expected": 2}\n\n{"prompt": "2 + 2"}\n')
    yaml = f"evaluation:\n  dataset: {bad}\n  graders: [{{type: numeric}}]\n"
    with pytest.raises(DatasetError, match=r"eval\.jsonl:3: missing 'expected'"):
        component_defs(yaml)
    with pytest.raises(DatasetError, match="file not found"):
        component_defs(f"evaluation:\n  dataset: {tmp_path / 'nope.jsonl'}\n")


@pytest.mark.parametrize(
    ("yaml", "match"),
    [
        ("evaluation: {items: [{prompt: a, expected: 1}], concurrency: 0}", "concurrency"),
        ("evaluation: {items: [{prompt: a, expected: 1}], concurency: 2}", "concurency"),
        ("evaluation: {items: [{prompt: a, expected: 1}], graders: [{type: numric}]}", "numric"),
        (
            "evaluation: {items: [{prompt: a, expected: 1}], graders: [{type: nope_mod_zz:f}]}",
            "cannot import",
        ),
        ("evaluation: {concurrency: 2}", "exactly one of dataset"),
        ("evaluation: {items: [{prompt: a, expected: 1}], progress_seconds: 0}", "progress"),
        (
            "evaluation: {items: [{prompt: a, expected: x}], graders: [{type: numeric}]}",
            "not a number",
        ),
        (
            "sessions: {routes: [{event_kinds: [checkpoint_registered], assets: '*', "
            "job_name: j}]}\n"
            "evaluation: {items: [{prompt: a, expected: 1}]}",
            "already routed",
        ),
    ],
)
def test_bad_sections_are_named(yaml, match):
    with pytest.raises(Exception, match=match):
        dg.Definitions.validate_loadable(component_defs(yaml))


def test_route_false_and_disabled():
    base = "evaluation: {items: [{prompt: a, expected: 1}], route: false}"
    defs = component_defs(base)
    assert defs.resolve_assets_def(EVAL_KEY) is not None
    assert not list(defs.sensors or [])
    off = component_defs("evaluation: {items: [{prompt: a, expected: 1}], enabled: false}")
    assert EVAL_KEY not in {s.key for s in off.resolve_all_asset_specs()}
