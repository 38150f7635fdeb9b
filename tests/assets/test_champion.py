"""The champion of each sweep in a real DagsterInstance: real evaluations of simulator
checkpoints over HTTP feed the champion sensor (ticked as the daemon ticks it); it names the
best checkpoint per sweep, requests champion_changed once per change, and the evaluation's
score check compares with the champion. Ties, landing order and re-evaluations give the same
answer every time."""

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_ASSET_SPEC, CHECKPOINT_PARTITIONS, TogetherRLResource
from rl_sessions_dagster.assets import build_evaluation_asset, champion_baseline
from rl_sessions_dagster.assets.evaluation import previous_checkpoint_baseline
from rl_sessions_dagster.core.sweeps import ChampionRule
from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.partitions import (
    CHAMPION_ASSET_KEY,
    CHECKPOINT_ASSET_KEY,
    EVALUATION_ASSET_KEY,
    SWEEP_PARTITIONS,
    checkpoint_metadata,
    checkpoint_partition_key,
)
from rl_sessions_dagster.sensors import ChampionOptions, build_champion_definitions
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

KEY = "sk-champion-CANARY-0424242"
pytestmark = pytest.mark.sim(api_key=KEY, seed=5)
SPEC = EvaluationSpec(
    items=[{"a": a, "b": b, "expected": a + b} for a in range(21, 27) for b in range(2, 7)],
    prompt_template="What is {a} + {b}?",
    graders=["numeric"],
    concurrency=4,
    tolerance=0.0,
)
GROUP = {"entity": "e", "project": "p", "group": "lr-sweep"}


@dg.asset
def deploy_champion() -> None: ...


def apply(instance, data):
    """What the daemon does with a tick's result besides launching runs."""
    for req in data.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
    for event in data.asset_events or []:
        instance.report_runless_asset_event(event)
    return data


def champion(instance, sweep):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=CHAMPION_ASSET_KEY, asset_partitions=[sweep]), limit=1
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def history(instance, sweep):
    """The champion after each change, oldest first."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=CHAMPION_ASSET_KEY, asset_partitions=[sweep]),
        limit=100,
        ascending=True,
    ).records
    metas = [r.asset_materialization.metadata for r in records]
    return [m["champion_checkpoint_id"].value for m in metas if m["changed"].value]


def test_best_checkpoint_per_sweep_changes_once_per_change_and_checks_scores(sim):
    resource = TogetherRLResource(api_key=KEY, base_url=sim.base_url, max_attempts=2)
    evaluation = build_evaluation_asset(
        SPEC, retry_policy=None, baselines=[previous_checkpoint_baseline, champion_baseline()]
    )
    defs = dg.Definitions.merge(
        dg.Definitions(
            assets=[CHECKPOINT_ASSET_SPEC, evaluation, deploy_champion],
            resources={"together": resource},
        ),
        build_champion_definitions(
            assets=dg.AssetSelection.assets(deploy_champion),
            options=ChampionOptions(job_name="deploy"),
        ),
    )
    a = sim.world.create_session(display_name="sweep-lr-1e-5", wandb=GROUP)
    b = sim.world.create_session(display_name="sweep-lr-1e-4", wandb=GROUP)
    c = sim.world.create_session(display_name="other-x")  # no W&B group: name prefix

    with dg.instance_for_test() as instance:

        def land(sid, step):
            cid = sim.world.add_inference_checkpoint(sid, step=step)
            with resource.get_client() as client:
                session = client.get_session(sid)
            (ck,) = [x for x in session.inference_checkpoints if x.id == cid]
            key = checkpoint_partition_key(session, ck)
            instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key])
            instance.report_runless_asset_event(  # as the event sensor records it
                dg.AssetMaterialization(
                    CHECKPOINT_ASSET_KEY, partition=key, metadata=checkpoint_metadata(session, ck)
                )
            )
            result = dg.materialize(
                [evaluation], partition_key=key, instance=instance,
                resources={"together": resource}, tags={"together/checkpoint_id": cid},
            )  # fmt: skip
            (check,) = result.get_asset_check_evaluations()
            score = result.asset_materializations_for_node(evaluation.op.name)[0].metadata
            return cid, score["score"].value, check

        champion_ticker = SensorTicker(defs, "together_rl_champion", instance)
        ticker = SensorTicker(defs, "together_rl_champion_on_change", instance)

        def tick():
            data = apply(instance, champion_ticker.tick())
            ticker.tick()  # the deploys: one per change of champion
            return data

        assert tick().skip_message  # nothing evaluated yet
        a5, score_a5, _ = land(a, 5)
        tick()
        first = champion(instance, "lr-sweep")
        assert (first["champion_checkpoint_id"], first["score"]) == (a5, score_a5)
        assert first["candidates"] == 1 and "margin" not in first
        assert instance.get_dynamic_partitions(SWEEP_PARTITIONS.name) == ["lr-sweep"]
        assert tick().skip_message  # no new evaluation: no new run

        b600, score_b600, _ = land(b, 600)  # the simulator's answers improve with step
        assert score_b600 > score_a5
        tick()
        second = champion(instance, "lr-sweep")
        assert second["champion_checkpoint_id"] == b600 and second["changed"]
        assert second["runner_up_checkpoint_id"] == a5
        assert second["margin"] == pytest.approx(score_b600 - score_a5)
        assert second["model_name"] and second["step"] == 600

        c10, _, _ = land(c, 10)
        _, score_a8, check = land(a, 8)  # worse than the champion of its sweep
        tick()
        assert champion(instance, "other")["champion_checkpoint_id"] == c10
        assert champion(instance, "lr-sweep")["champion_checkpoint_id"] == b600
        assert champion(instance, "lr-sweep")["candidates"] == 3
        assert check.metadata["sweep champion score"].value == score_b600
        assert not check.passed and score_a8 < score_b600

        assert ticker.run_keys() == [
            f"champion_changed:lr-sweep:{a5}:1",
            f"champion_changed:lr-sweep:{b600}:2",
            f"champion_changed:other:{c10}:1",
        ]
        (request,) = [r for t in ticker.history for r in t.run_requests if b600 in r.run_key]
        assert request.job_name == "deploy"
        assert request.tags["together/event"] == "champion_changed"
        assert request.tags["together/previous_checkpoint_id"] == a5
        run = defs.resolve_job_def("deploy").execute_in_process(
            instance=instance, tags=request.tags
        )
        assert run.success


RECORDED = [  # (checkpoint, step, score): b and c tie on score, c is earlier
    ("a", 10, 0.5),
    ("b", 30, 0.8),
    ("c", 20, 0.8),
    ("d", 40, 0.7),
]


def recorded_defs():
    return dg.Definitions.merge(
        dg.Definitions(
            assets=[
                CHECKPOINT_ASSET_SPEC,
                dg.AssetSpec(EVALUATION_ASSET_KEY, partitions_def=CHECKPOINT_PARTITIONS),
                deploy_champion,
            ]
        ),
        build_champion_definitions(
            assets=dg.AssetSelection.assets(deploy_champion),
            options=ChampionOptions(job_name="deploy"),
        ),
    )


def record(instance, cid, step, score):
    """An evaluation as any asset can record it: the sensor reads score, step, id."""
    key = f"run-{cid}/{step:06d}/{cid}"
    instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key])
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            CHECKPOINT_ASSET_KEY, partition=key,
            metadata={"display_name": f"run-{cid}", "wandb_group": "g"},
        )
    )  # fmt: skip
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            EVALUATION_ASSET_KEY, partition=key,
            metadata={"score": float(score), "step": step, "checkpoint_id": cid},
        )
    )  # fmt: skip


def test_ties_and_landing_order_give_the_same_answer_and_re_evaluations_count():
    finals = set()
    for order in (RECORDED, RECORDED[::-1]):  # each tie-break rule is decided both ways
        with dg.instance_for_test() as instance:
            ticker = SensorTicker(recorded_defs(), "together_rl_champion", instance)
            for i, item in enumerate(order):
                record(instance, *item)
                if i % 2:
                    apply(instance, ticker.tick())
            apply(instance, ticker.tick())
            final = champion(instance, "g")
            finals.add((final["champion_checkpoint_id"], final["runner_up_checkpoint_id"],
                        final["margin"], final["candidates"]))  # fmt: skip
    assert finals == {("c", "b", 0.0, 4)}

    with dg.instance_for_test() as instance:
        champion_ticker = SensorTicker(recorded_defs(), "together_rl_champion", instance)
        ticker = SensorTicker(recorded_defs(), "together_rl_champion_on_change", instance)

        def tick():
            apply(instance, champion_ticker.tick())
            ticker.tick()

        for item in RECORDED:
            record(instance, *item)
        tick()  # one tick, four evaluations: each change is recorded
        assert history(instance, "g") == ["a", "b", "c"]
        record(instance, "c", 20, 0.6)  # re-evaluated lower: b takes over
        tick()
        assert champion(instance, "g")["champion_checkpoint_id"] == "b"
        record(instance, "d", 40, 0.75)  # a change below the champion: no event
        tick()
        record(instance, "c", 20, 0.9)  # and back: a new change, a new run
        tick()
        assert champion(instance, "g")["champion_checkpoint_id"] == "c"
        assert history(instance, "g") == ["a", "b", "c", "b", "c"]
        # one run per tick whose champion changed, for the champion the tick ended with
        assert ticker.run_keys() == [
            "champion_changed:g:c:3",
            "champion_changed:g:b:4",
            "champion_changed:g:c:5",
        ]


def test_lower_is_better_and_min_candidates():
    defs = build_champion_definitions(rule=ChampionRule(direction="lower", min_candidates=3))
    defs = dg.Definitions.merge(defs, dg.Definitions(assets=[
        CHECKPOINT_ASSET_SPEC, dg.AssetSpec(EVALUATION_ASSET_KEY, partitions_def=CHECKPOINT_PARTITIONS)
    ]))  # fmt: skip
    with dg.instance_for_test() as instance:
        ticker = SensorTicker(defs, "together_rl_champion", instance)
        for item in RECORDED[:2]:
            record(instance, *item)
        apply(instance, ticker.tick())
        assert champion(instance, "g")["champion_checkpoint_id"] == ""
        record(instance, *RECORDED[2])
        apply(instance, ticker.tick())
        assert champion(instance, "g")["champion_checkpoint_id"] == "a"
        assert ticker.run_keys() == []  # no route: the champion is recorded, nothing runs
    assert [s.name for s in defs.sensors] == ["together_rl_champion"]


def test_the_champion_sensor_targets_the_champion_even_with_a_job_to_run():
    """Dagster lists on an asset's page the sensors whose asset selection covers it; a sensor
    takes a job or assets, not both, so the runs come from a second sensor."""
    defs = recorded_defs()
    graph = defs.resolve_asset_graph()
    sensors = {s.name: s for s in defs.sensors}
    assert set(sensors) == {"together_rl_champion", "together_rl_champion_on_change"}
    assert sensors["together_rl_champion"].asset_selection.resolve(graph) == {CHAMPION_ASSET_KEY}
    assert [j.name for j in sensors["together_rl_champion_on_change"].jobs] == ["deploy"]
