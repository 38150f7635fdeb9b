"""The built-in evaluation asset in a real DagsterInstance against the simulator over HTTP:
metadata and items table, the score check against the previous checkpoint of the session (and
any other baseline), failures named by checkpoint, a bad dataset failing at load."""

import json
import re

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_PARTITIONS, TogetherRLResource
from rl_sessions_dagster.assets import build_evaluation_asset
from rl_sessions_dagster.assets.evaluation import SCORE_CHECK_NAME, Baseline
from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.evaluation.dataset import DatasetError
from rl_sessions_dagster.partitions import EVALUATION_ASSET_KEY, checkpoint_partition_key

KEY = "sk-evalasset-CANARY-0123456789"
pytestmark = pytest.mark.sim(api_key=KEY, seed=5)
ITEMS = [{"a": a, "b": b, "expected": a + b} for a in range(21, 27) for b in range(2, 7)]
SPEC = EvaluationSpec(
    items=ITEMS,
    prompt_template="What is {a} + {b}?",
    graders=["numeric", "contains"],
    concurrency=4,
    tolerance=0.0,
    table_rows=10,
    price_prompt_per_million=1.0,
    price_completion_per_million=1.0,
)


@pytest.fixture
def resource_options() -> dict:
    return {"max_attempts": 2, "backoff_initial": 0.01, "backoff_jitter": 0.0}


def new_checkpoint(sim, instance, resource, sid, step, **kw):
    cid = sim.world.add_inference_checkpoint(sid, step=step, **kw)
    with resource.get_client() as client:
        session = client.get_session(sid)
    (ck,) = [c for c in session.inference_checkpoints if c.id == cid]
    key = checkpoint_partition_key(session, ck)
    instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key])
    return cid, key


def evaluate(asset, instance, resource, cid, key, **kw):
    return dg.materialize(
        [asset], partition_key=key, instance=instance, resources={"together": resource},
        tags={"together/checkpoint_id": cid}, **kw,
    )  # fmt: skip


def check_of(result):
    (check,) = result.get_asset_check_evaluations()
    return check


def test_metadata_table_and_check_against_the_previous_checkpoint(sim, resource):
    asset = build_evaluation_asset(SPEC, retry_policy=None)
    sid = sim.world.create_session(display_name="sweep-a")
    with dg.instance_for_test() as instance:
        cid1, key1 = new_checkpoint(sim, instance, resource, sid, 5)
        first = evaluate(asset, instance, resource, cid1, key1)
        meta = first.asset_materializations_for_node(asset.op.name)[0].metadata
        assert (
            check_of(first).passed and "previous checkpoint score" not in check_of(first).metadata
        )
        cid2, key2 = new_checkpoint(sim, instance, resource, sid, 600)
        second = evaluate(asset, instance, resource, cid2, key2)
        meta2 = second.asset_materializations_for_node(asset.op.name)[0].metadata

    score1, score2 = meta["score"].value, meta2["score"].value
    assert score2 > score1  # the simulator's answers improve with the step
    assert meta["score sweep-a"].value == score1  # one plot per session
    # the session's scores by step, as one line: the second joins the first
    assert meta["score by step"].value.endswith(f"{score1:.3f} → {score1:.3f}, step 5")
    line = meta2["score by step"].value
    assert line == f"▁█ {score1:.3f} → {score2:.3f}, steps 5-600"
    assert {"score [numeric]", "score [contains]"} <= set(meta)
    assert meta["passed"].value + meta["failed"].value == 30 and meta["answers"].value == 30
    assert meta["checkpoint_id"].value == cid1 and meta["step"].value == 5
    assert meta["session_id"].value == sid and meta["dataset"].value == "inline items"
    assert meta["latency_p95_ms"].value >= meta["latency_p50_ms"].value > 0
    assert meta["estimated_cost_usd"].value > 0 and meta["prompt_tokens"].value > 0
    # numbers, not text, so Insights and the asset plots can chart them
    assert isinstance(meta["estimated_cost_usd"], dg.FloatMetadataValue)
    tokens = {k: meta[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    assert all(isinstance(v, dg.IntMetadataValue) for v in tokens.values())
    assert tokens["total_tokens"].value == sum(v.value for v in tokens.values()) / 2
    rows = meta["items"].value.records
    assert len(rows) == 10  # truncated to table_rows
    verdicts = [r.data["verdict"] for r in rows]
    assert verdicts == sorted(verdicts, key=["fail", "unreadable", "pass"].index)
    assert verdicts[0] == "fail"  # step 5 gets many wrong: they come first

    check = check_of(second)
    assert check.passed and check.metadata["previous checkpoint score"].value == score1
    assert check.metadata["previous checkpoint partition"].value == key1
    everything = json.dumps({k: str(v) for k, v in {**meta, **meta2}.items()})
    assert KEY not in everything


def test_a_drop_beyond_tolerance_fails_the_check_and_baselines_compose(sim, resource):
    def champion(context, key, current):
        return Baseline("champion", 1.0, "sweep-a/000999/champion")

    asset = build_evaluation_asset(SPEC, retry_policy=None,
                                   baselines=[champion])  # fmt: skip
    sid = sim.world.create_session(display_name="sweep-b")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, sid, 3)
        check = check_of(evaluate(asset, instance, resource, cid, key))
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["champion score"].value == 1.0
    assert check.metadata["drop vs champion"].value > 0


def test_previous_checkpoint_of_another_session_or_dataset_is_not_a_baseline(sim, resource):
    asset = build_evaluation_asset(SPEC, retry_policy=None)
    other = build_evaluation_asset(SPEC.model_copy(update={"items": ITEMS[:10]}),
                                   retry_policy=None)  # fmt: skip
    a = sim.world.create_session(display_name="same-name")
    b = sim.world.create_session(display_name="same-name")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, a, 10)
        evaluate(other, instance, resource, cid, key)  # same asset key, other dataset
        cid_b, key_b = new_checkpoint(sim, instance, resource, b, 20)
        evaluate(asset, instance, resource, cid_b, key_b)  # other session, same label
        cid2, key2 = new_checkpoint(sim, instance, resource, a, 30)
        result = evaluate(asset, instance, resource, cid2, key2)
        check = check_of(result)
        meta = result.asset_materializations_for_node(asset.op.name)[0].metadata
    assert "previous checkpoint score" not in check.metadata
    assert meta["score by step"].value.endswith(", step 30")  # only its own session's scores


def test_unreadable_answers_are_counted_shown_and_fail_the_check(sim, resource):
    spec = SPEC.model_copy(update={"graders": [{"type": "json_field", "path": "answer"}]})
    asset = build_evaluation_asset(spec, retry_policy=None)
    sid = sim.world.create_session(display_name="prose")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, sid, 10)
        result = evaluate(asset, instance, resource, cid, key)
    meta = result.asset_materializations_for_node(asset.op.name)[0].metadata
    assert meta["unreadable"].value == 30 and meta["failed"].value == 0
    assert meta["unreadable [json_field]"].value == 30
    assert "score" not in meta  # nothing readable: no point on the plot, not a zero
    rows = meta["items"].value.records
    assert {r.data["verdict"] for r in rows} == {"unreadable"}
    assert "no JSON" in rows[0].data["graders"]
    check = check_of(result)
    assert not check.passed and "unreadable" in check.metadata["reason"].value


def test_endpoint_that_keeps_failing_fails_the_run_naming_the_checkpoint(sim, resource):
    asset = build_evaluation_asset(SPEC, retry_policy=None)
    sid = sim.world.create_session(display_name="flaky")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, sid, 10)
        sim.faults.add("POST /v1/chat/completions", status=503)
        result = evaluate(asset, instance, resource, cid, key, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        text = str(failure.event_specific_data.error)
        assert f"checkpoint {cid} (partition {key})" in text and "after 2 attempt" in text
        assert KEY not in text
        # healed: the next run (a run retry) evaluates it
        sim.faults.clear()
        assert evaluate(asset, instance, resource, cid, key).success


def test_unregistered_checkpoint_fails_without_retry(sim, resource):
    asset = build_evaluation_asset(SPEC)  # default retry policy: must not be used here
    sid = sim.world.create_session(display_name="late")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, sid, 10, registered=False)
        result = evaluate(asset, instance, resource, cid, key, raise_on_error=False)
    assert not result.success
    assert not [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]


def test_bad_dataset_fails_when_the_definitions_load(tmp_path):
    (tmp_path / "eval.jsonl").write_text('{"prompt": "1 + 1", "expected": 2}\n{"prompt": \n')
    with pytest.raises(DatasetError, match=r"eval\.jsonl:2: invalid JSON"):
        build_evaluation_asset(EvaluationSpec(dataset="eval.jsonl"), base_dir=tmp_path)
    with pytest.raises(DatasetError, match="file not found"):
        build_evaluation_asset(EvaluationSpec(dataset="missing.jsonl"), base_dir=tmp_path)


def test_defaults_key_check_and_partitions():
    asset = build_evaluation_asset(SPEC)
    assert asset.key == EVALUATION_ASSET_KEY and asset.partitions_def == CHECKPOINT_PARTITIONS
    assert {c.name for c in asset.check_specs} == {SCORE_CHECK_NAME}
    defs = dg.Definitions(assets=[asset], resources={"together": TogetherRLResource()})
    dg.Definitions.validate_loadable(defs)


def test_a_slow_evaluation_logs_its_progress_while_it_runs(sim, resource):
    """A slow endpoint and a tiny interval: progress lines appear (counted, never timed), each
    with answers done of total, errors and the rate; the numbers only grow."""
    spec = EvaluationSpec(items=ITEMS[:6], prompt_template="What is {a} + {b}?",
                          graders=["numeric"], concurrency=1)  # fmt: skip
    asset = build_evaluation_asset(spec, retry_policy=None, progress_seconds=0.01)
    sid = sim.world.create_session(display_name="slow")
    with dg.instance_for_test() as instance:
        cid, key = new_checkpoint(sim, instance, resource, sid, 10)
        sim.faults.add("POST /v1/chat/completions", delay_s=0.1)
        result = evaluate(asset, instance, resource, cid, key)
        assert result.success
        messages = [e.user_message for e in instance.all_logs(result.run_id)]
    line = re.compile(
        r"^evaluating (?P<model>\S+): (?P<done>\d+)/6 answers, (?P<errors>\d+) error\(s\), "
        r"\d+ failed, \d+ unreadable, \d+\.\d\d items/s after \d+ s"
    )
    found = [m for m in map(line.match, messages) if m]
    assert len(found) >= 3
    done = [int(m["done"]) for m in found]
    assert done == sorted(done) and done[-1] < 6 and {m["errors"] for m in found} == {"0"}
    assert any(f"asking {found[0]['model']} 6 time(s), 1 at a time" in m for m in messages)
    assert all(KEY not in m for m in messages)
