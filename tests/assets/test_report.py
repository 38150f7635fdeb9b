"""The finished-session report in a real DagsterInstance against the simulator over HTTP:
status, error, steps, checkpoints with the scores the evaluation recorded, spend from the
spend tables, the W&B link; a session with no evaluation or spend is reported as such."""

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_PARTITIONS, TogetherRLResource
from rl_sessions_dagster.assets import build_evaluation_asset, build_session_report_asset
from rl_sessions_dagster.assets.report import REPORT_ASSET_KEY
from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.partitions import checkpoint_partition_key
from rl_sessions_dagster.storage import SQLAlchemyTableStore
from rl_sessions_dagster.storage.rows import SessionSpendRow

KEY = "sk-report-CANARY-31337"
pytestmark = pytest.mark.sim(api_key=KEY, seed=3)
SPEC = EvaluationSpec(
    items=[{"a": a, "b": 3, "expected": a + 3} for a in range(10, 20)],
    prompt_template="What is {a} + {b}?",
    graders=["numeric"],
    tolerance=1.0,
)
WANDB = {"group": "lr-sweep", "url": "https://wandb.ai/demo/p/runs/r1"}


def report(asset, instance, resource, sid):
    result = dg.materialize(
        [asset], instance=instance, resources={"together": resource},
        tags={"together/session_id": sid},
    )  # fmt: skip
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    return {k: v.value for k, v in mat.metadata.items()}


def test_report_of_a_stopped_session_with_scores_and_spend(sim, tmp_path):
    resource = TogetherRLResource(api_key=KEY, base_url=sim.base_url, max_attempts=2)
    spend_db = str(tmp_path / "spend.sqlite")
    asset = build_session_report_asset(spend_db_path=spend_db)
    evaluation = build_evaluation_asset(SPEC, retry_policy=None)
    sid = sim.world.create_session(display_name="sweep-lr-1e-5", wandb=WANDB)
    sim.world.advance_steps(sid, 40)
    evaluated = sim.world.add_inference_checkpoint(sid)
    sim.world.advance_steps(sid, 40)
    not_evaluated = sim.world.add_inference_checkpoint(sid)
    sim.world.stop_session(sid, immediate=True)
    with SQLAlchemyTableStore(spend_db) as store:
        store.save([], [SessionSpendRow(sid, "r1", "sweep-lr-1e-5", "lr-sweep", 1800.0, 1.25)],
                   now_ms=0)  # fmt: skip
    with dg.instance_for_test() as instance, resource.get_client() as client:
        session = client.get_session(sid)
        (ck,) = [c for c in session.inference_checkpoints if c.id == evaluated]
        key = checkpoint_partition_key(session, ck)
        instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key])
        done = dg.materialize(
            [evaluation], partition_key=key, instance=instance,
            resources={"together": resource}, tags={"together/checkpoint_id": evaluated},
        )  # fmt: skip
        score = done.asset_materializations_for_node(evaluation.op.name)[0].metadata["score"].value
        meta = report(asset, instance, resource, sid)

    assert (meta["status"], meta["steps"], meta["error_code"]) == ("STOPPED", 80, "")
    assert meta["checkpoint_count"] == 2 and meta["evaluated_checkpoints"] == 1
    rows = {r.data["checkpoint_id"]: r.data for r in meta["checkpoints"].records}
    assert rows[evaluated]["score"] == score and rows[evaluated]["step"] == 40
    assert rows[not_evaluated]["score"] is None and rows[not_evaluated]["model_name"]
    assert (meta["best_score"], meta["best_checkpoint"]) == (score, key)
    assert (meta["cost_usd"], meta["billed_hours"]) == (1.25, 0.5)
    assert meta["wandb_url"] == WANDB["url"]
    text = meta["report"]
    assert "**STOPPED**" in text and "$1.2500" in text and "not evaluated" in text
    assert f"{score:.4f}" in text and WANDB["url"] in text and KEY not in text
    assert meta["score by step"] == f"▁ {score:.3f} → {score:.3f}, step 40"
    assert f"score by step: `{meta['score by step']}`" in text


def test_report_of_an_errored_session_without_evaluation_or_spend(sim, tmp_path):
    resource = TogetherRLResource(api_key=KEY, base_url=sim.base_url, max_attempts=2)
    asset = build_session_report_asset(spend_db_path=str(tmp_path / "absent.sqlite"))
    sid = sim.world.create_session(display_name="sweep-lr-3e-5")
    sim.world.advance_steps(sid, 7)
    sim.world.fail_session(sid, code="TRAINING_SESSION_ERROR_CODE_OUT_OF_MEMORY",
                           message="CUDA out of memory at step 7")  # fmt: skip
    with dg.instance_for_test() as instance:
        meta = report(asset, instance, resource, sid)
        with pytest.raises(dg.Failure, match="no session to report"):
            dg.materialize([asset], instance=instance, resources={"together": resource})
    assert meta["status"] == "ERROR" and meta["steps"] == 7
    assert meta["error_code"] == "TRAINING_SESSION_ERROR_CODE_OUT_OF_MEMORY"
    assert meta["error_message"] == "CUDA out of memory at step 7"
    assert meta["checkpoint_count"] == 0 and not meta["spend_recorded"]
    assert "best_score" not in meta and "wandb_url" not in meta
    text = meta["report"]
    assert "CUDA out of memory" in text and "not recorded" in text
    assert "No inference checkpoint was saved." in text and "no W&B run" in text
    assert not (tmp_path / "absent.sqlite").exists()  # reading never creates the tables
    assert asset.key == REPORT_ASSET_KEY
