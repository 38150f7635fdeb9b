"""The spend asset, materialized in a real DagsterInstance against a manual-clock simulator:
its numbers match a hand calculation, prices are asked once per configuration, and the UI
tables carry resources and sweeps."""

import sqlite3

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.assets.spend import build_spend_asset, run_spend
from rl_sessions_dagster.storage import SQLAlchemyTableStore

KEY = "sk-test-CANARY-spend"
pytestmark = pytest.mark.sim(api_key=KEY, seed=5, world={"clock": "manual"})
MODEL = "Qwen/Qwen3-8B"


def materialize(sim, instance, db):
    asset = build_spend_asset()
    result = dg.materialize(
        [asset],
        instance=instance,
        resources={"together": TogetherRLResource(api_key=KEY, base_url=sim.base_url)},
        run_config={"ops": {"together__rl_spend": {"config": {"db_path": db}}}},
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("together__rl_spend")
    return mat.metadata


def test_spend_matches_a_hand_calculation(sim, tmp_path):
    world = sim.world
    world.set_price(MODEL, 2.0)  # LoRA, 1 generator replica: 2 GPUs -> $4.00/h
    world.resource_provision_delay = 600
    db = str(tmp_path / "spend.sqlite")
    with RLSessionsClient(KEY, base_url=sim.base_url) as client:
        r1 = client.create_model_resource(MODEL).id
        r2 = client.create_model_resource(MODEL).id  # same configuration: priced once
    with dg.instance_for_test() as instance:
        world.advance_clock(600)  # both READY at t0+600
        first = materialize(sim, instance, db)
        assert first["estimate_cost_requests"].value == 1
        assert first["billing_now"].value == 2

        a = world.create_session(r1, display_name="sweep-x-1")  # t0+600
        world.advance_clock(600)
        b = world.create_session(r1, display_name="sweep-x-2", wandb={"group": "sweep-x"})
        world.advance_clock(300)
        world.stop_model_resource(r2)  # t0+1500: 900 s billed, all idle
        world.advance_clock(900)
        world.stop_session(a, immediate=True)  # t0+2400
        world.advance_clock(600)
        world.stop_session(b, immediate=True)  # t0+3000
        world.advance_clock(600)
        world.stop_model_resource(r1)  # t0+3600
        world.advance_clock(60)

        second = materialize(sim, instance, db)
    # r1: 3000 s x $4/h = $3.3333 (A 1200 s, B 1200 s, idle 600 s); r2: 900 s = $1.00 idle.
    assert second["estimate_cost_requests"].value == 0
    assert second["total_cost"].value == pytest.approx(10 / 3 + 1.0, abs=1e-4)
    assert second["idle_cost"].value == pytest.approx(4 * 600 / 3600 + 1.0, abs=1e-4)
    assert second["billed_hours"].value == pytest.approx((3000 + 900) / 3600, abs=1e-4)
    assert second["billing_now"].value == 0
    # USD and hours as numbers, not text, so Insights and the asset plots can chart them
    for name in ("total_cost", "idle_cost", "billed_hours"):
        assert isinstance(second[name], dg.FloatMetadataValue), name
    assert isinstance(second["billing_now"], dg.IntMetadataValue)
    resources = {r.data["resource_id"]: r.data for r in second["resources"].records}
    assert resources[r1]["cost"] == pytest.approx(3.3333, abs=1e-4)
    assert resources[r1]["price_per_hour"] == 4.0 and resources[r1]["status"] == "STOPPED"
    assert resources[r2]["cost"] == pytest.approx(1.0)
    (sweep,) = second["sweeps"].records
    assert sweep.data == {
        "sweep": "sweep-x", "sessions": 2, "billed_hours": pytest.approx(0.6667, abs=1e-4),
        "cost": pytest.approx(2.6667, abs=1e-4),
    }  # fmt: skip
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT session_id, cost FROM rl_session_spend").fetchall())
        assert rows == {a: pytest.approx(4 / 3), b: pytest.approx(4 / 3)}
        spans = conn.execute("SELECT span_source FROM rl_resource_spend").fetchall()
        assert {s for (s,) in spans} == {"updated_at"}


def test_resource_never_seen_ready_is_billed_from_its_first_session(sim, tmp_path):
    world = sim.world
    rid = world.create_model_resource(MODEL)  # READY at t0, but the asset never saw it so
    sid = world.create_session(rid)
    world.advance_clock(1800)
    world.stop_session(sid, immediate=True)
    world.stop_model_resource(rid)
    with (
        RLSessionsClient(KEY, base_url=sim.base_url) as client,
        SQLAlchemyTableStore(tmp_path / "s.sqlite") as store,
    ):
        report = run_spend(client, store)
    (span,) = report.spans
    assert span.source == "first_session"
    assert report.spend.resource_ms[rid] == 1800 * 1000
    price = world.price_per_hour(MODEL)
    assert report.spend.total_cost == pytest.approx(price / 2)


def test_unpriceable_configuration_is_reported_not_fatal(sim, tmp_path):
    world = sim.world
    world.create_model_resource("some/retired-model")  # estimate-cost answers 400
    with (
        RLSessionsClient(KEY, base_url=sim.base_url) as client,
        SQLAlchemyTableStore(tmp_path / "s.sqlite") as store,
    ):
        report = run_spend(client, store)
    assert report.spend.unpriced and report.price_errors and report.spend.total_cost == 0
