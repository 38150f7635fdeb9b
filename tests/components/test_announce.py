"""Announce only: a Component with no routes still runs its sensor, which only adds the
checkpoint partitions and records the checkpoint asset's runless materializations; a user's
asset with ``AutomationCondition.eager()`` is then requested for exactly the new partition."""

import dagster as dg
import pytest

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    PollingOptions,
    TogetherRLComponent,
    build_session_sensor,
)
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

API_KEY = "sim-announce-key-0123456789abcdef"


@dg.asset(
    partitions_def=CHECKPOINT_PARTITIONS,
    deps=[CHECKPOINT_ASSET_KEY],
    automation_condition=dg.AutomationCondition.eager(),
)
def my_evaluation() -> None: ...


def record(instance: dg.DagsterInstance, data) -> None:
    """What the daemon does with a tick's partition requests and asset events."""
    for request in data.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    for event in data.asset_events or []:
        instance.report_runless_asset_event(event)


def test_announce_only_component_feeds_an_eager_asset(monkeypatch):
    component = TogetherRLComponent.resolve_from_yaml(
        "sessions: {announce: [checkpoint_registered]}\nsync: {enabled: false}\n"
    )
    with RLSimulator(api_key=API_KEY) as sim, dg.instance_for_test() as instance:
        monkeypatch.setenv("TOGETHER_API_KEY", API_KEY)
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        defs = dg.Definitions.merge(
            dg.build_defs_for_component(component=component),
            dg.Definitions(assets=[my_evaluation]),
        )
        dg.Definitions.validate_loadable(defs)
        sensor = defs.resolve_sensor_def("together_rl_events")
        assert list(sensor.targets) == []  # no job: nothing is run by the sensor itself
        ticker = SensorTicker(defs, "together_rl_events", instance)
        sid = sim.world.create_session(display_name="sweep-a")
        record(instance, ticker.tick())  # first tick: history is not announced
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert before.total_requested == 0
        sim.world.advance_steps(sid, 10)
        ckpt = sim.world.add_inference_checkpoint(sid)
        data = ticker.tick()
        assert data.run_requests == []
        key = f"sweep-a/000010/{ckpt[:8]}"
        (add,) = data.dynamic_partitions_requests
        assert list(add.partition_keys) == [key]
        (mat,) = data.asset_events
        assert mat.asset_key == CHECKPOINT_ASSET_KEY and mat.partition == key
        record(instance, data)

        after = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=before.cursor
        )
        assert after.total_requested == 1
        assert after.get_requested_partitions(my_evaluation.key) == {key}
        assert ticker.tick().asset_events == []  # announced once


def test_no_routes_and_nothing_announced_builds_no_sensor():
    component = TogetherRLComponent.resolve_from_yaml("sessions: {running: true}\n")
    assert not list(dg.build_defs_for_component(component=component).sensors or [])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"announce": ["session_stopped"]}, "announce takes checkpoint kinds"),
        (
            {
                "announce": ["checkpoint_registered"],
                "options": PollingOptions(checkpoint_asset_key=None),
            },
            "needs options.checkpoint_asset_key",
        ),
        ({}, "needs at least one EventRoute, or checkpoint kinds to announce"),
    ],
)
def test_announce_mistakes_fail_when_built(kwargs, match):
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=match):
        build_session_sensor(name="s", routes=[], **kwargs)
