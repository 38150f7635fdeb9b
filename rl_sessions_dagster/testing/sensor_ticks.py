"""Evaluate a sensor in a test the way the daemon does, carrying its cursor between ticks.

``evaluate_tick`` needs ``instance_ref`` (to validate dynamic partitions added in the same
result) and ``definitions`` (to resolve partitioned run requests); resources must be passed
explicitly. This wraps those details so users can unit-test their own wiring::

    with RLSimulator(api_key="sim-test-key-0123456789abcdef") as sim, dg.instance_for_test() as instance:
        ticker = SensorTicker(defs, "together_rl_checkpoint_sensor", instance)
        ticker.tick()                       # first tick: history is not announced
        sim.world.add_inference_checkpoint(session_id)
        assert len(ticker.tick().run_requests) == 1

Every run request the ticker returns names its job: Dagster leaves ``job_name`` empty when a
sensor targets a single job (the daemon fills it in when it launches the run), so the ticker
fills it the same way and tests can assert where each run goes.

Imports Dagster: not re-exported from ``rl_sessions_dagster.testing`` (which stays light).
"""

from typing import Any

import dagster as dg
from dagster._core.definitions.sensor_definition import SensorExecutionData
from dagster_shared.record import replace


class SensorTicker:
    """One sensor of ``defs`` evaluated against ``instance``; the cursor is kept like the
    daemon keeps it (unchanged when the tick skips without a cursor or raises)."""

    def __init__(
        self,
        defs: dg.Definitions,
        sensor_name: str,
        instance: dg.DagsterInstance,
        *,
        resources: dict[str, Any] | None = None,
        cursor: str | None = None,
    ) -> None:
        self.defs = defs
        self.sensor = defs.resolve_sensor_def(sensor_name)
        self.instance = instance
        self.resources = resources if resources is not None else dict(defs.resources or {})
        self.cursor = cursor
        self.history: list[SensorExecutionData] = []

    def tick(self) -> SensorExecutionData:
        with dg.build_sensor_context(
            instance=self.instance,
            instance_ref=self.instance.get_ref(),
            definitions=self.defs,
            cursor=self.cursor,
            resources=self.resources,
            sensor_name=self.sensor.name,
        ) as context:
            data = self.sensor.evaluate_tick(context)
        data = self._with_job_names(data)
        if data.cursor is not None:
            self.cursor = data.cursor
        self.history.append(data)
        return data

    def _with_job_names(self, data: SensorExecutionData) -> SensorExecutionData:
        targets = self.sensor.targets
        if not data.run_requests or len(targets) != 1:
            return data
        job_name = targets[0].job_name
        requests = [
            r if r.job_name else r.with_replaced_attrs(job_name=job_name) for r in data.run_requests
        ]
        return replace(data, run_requests=requests)

    def run_keys(self) -> list[str]:
        """Every run key requested so far, in order."""
        return [r.run_key for d in self.history for r in (d.run_requests or []) if r.run_key]
