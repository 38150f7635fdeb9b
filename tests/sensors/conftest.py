"""Sensor tests: the simulator's key and seed (``sim`` and ``instance`` are the root's), and
small definitions wired the way a user would wire them."""

from typing import Any

import dagster as dg
import pytest

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    EventKind,
    EventRoute,
    TogetherRLResource,
    build_session_sensor,
)
from rl_sessions_dagster.core.events import TERMINAL_EVENTS
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

from ..support import (  # noqa: F401 (re-exported)
    evaluation,
    evaluation_job,
    report,
    report_job,
    sim_resource,
)

API_KEY = "sk-test-CANARY-0123456789"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": API_KEY, "seed": 7}


def make_resource(sim: RLSimulator, **overrides) -> TogetherRLResource:
    options = {
        "max_attempts": 2,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
        "retry_after_cap": 0.2,
    }
    options.update(overrides)
    return sim_resource(sim, **options)


def make_defs(sim: RLSimulator, *sensors: dg.SensorDefinition, **resource_overrides):
    sensors = sensors or (
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
        ),
        build_session_sensor(
            name="together_rl_session_status_sensor",
            routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
        ),
    )
    return dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, evaluation],
        jobs=[evaluation_job, report_job],
        sensors=list(sensors),
        resources={"together": make_resource(sim, **resource_overrides)},
    )


@pytest.fixture
def ticker(instance):
    def make(defs: dg.Definitions, sensor_name: str) -> SensorTicker:
        return SensorTicker(defs, sensor_name, instance)

    return make
