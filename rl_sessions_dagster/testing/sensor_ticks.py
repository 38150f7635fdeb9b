"""Evaluate a sensor in a test the way the daemon does, carrying its cursor between ticks.

``evaluate_tick`` needs ``instance_ref`` (to validate dynamic partitions added in the same
result) and ``definitions`` (to resolve partitioned run requests); resources must be passed
explicitly. This wraps those details so users can unit-test their own wiring::

    with RLSimulator(api_key="sim-test-key-0123456789abcdef") as sim, dg.instance_for_test() as instance:
        ticker = SensorTicker(defs, "together_rl_checkpoint_sensor", instance)
        ticker.tick()                       # first tick: history is not announced
        sim.world.add_inference_checkpoint(session_id)
        assert len(ticker.tick().run_requests) == 1

Each tick's ``context.log`` is stored as the daemon stores it (under a log key), so
``ticker.log_messages()`` shows what the tick's page in the UI would. Run requests name their
job (Dagster leaves ``job_name`` empty for a sensor with a single target and the daemon fills it
in at launch; the ticker does the same). Imports Dagster: not re-exported from the package.
"""

import uuid
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster._core.definitions.instigation_logger import get_instigation_log_records
from dagster._core.definitions.sensor_definition import SensorExecutionData
from dagster._core.execution.build_resources import wrap_resources_for_execution
from dagster._core.log_manager import LOG_RECORD_METADATA_ATTR
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
        #: The log key of each tick, in order (what the daemon stores on a tick).
        self.log_keys: list[list[str]] = []
        self._run_id = uuid.uuid4().hex[:8]

    def tick(self) -> SensorExecutionData:
        # build_sensor_context has no log_key: built like the daemon builds it instead.
        log_key = ["sensor_ticker", self._run_id, self.sensor.name, str(len(self.log_keys))]
        self.log_keys.append(log_key)
        with dg.SensorEvaluationContext(
            instance_ref=self.instance.get_ref(),
            cursor=self.cursor,
            log_key=log_key,
            repository_name=self.defs.get_repository_def().name,
            instance=self.instance,
            sensor_name=self.sensor.name,
            resources=wrap_resources_for_execution(self.resources),
            definitions=self.defs,
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

    def log_records(self, tick: int = -1) -> list[Mapping[str, Any]]:
        """The stored log records of one tick (default: the last), as the UI reads them."""
        if not self.log_keys:
            return []
        return list(get_instigation_log_records(self.instance, self.log_keys[tick]))

    def log_messages(self, tick: int = -1) -> list[tuple[str, str]]:
        """``(level name, message)`` of each line one tick logged (default: the last)."""
        out = []
        for record in self.log_records(tick):
            meta = record.get(LOG_RECORD_METADATA_ATTR) or {}
            out.append((str(record.get("levelname")), str(meta.get("orig_message", record["msg"]))))
        return out
