"""Evaluate a sensor in a test as the daemon does (cursor carried between ticks, ``context.log``
kept per tick for ``log_messages()``). Imports Dagster: not re-exported from the package."""

import uuid
from collections.abc import Mapping
from typing import Any

import dagster as dg

# The UI's reader of a tick's stored log lines; Dagster has no public one.
from dagster._core.definitions.instigation_logger import get_instigation_log_records

# What evaluate_tick returns; Dagster exports no public name for it.
from dagster._core.definitions.sensor_definition import SensorExecutionData
from dagster_shared.record import replace


class SensorTicker:
    """One sensor of ``defs`` evaluated against ``instance``; the cursor is kept like the
    daemon keeps it (unchanged when the tick skips without a cursor or raises)."""

    def __init__(self, defs: dg.Definitions, sensor_name: str, instance: dg.DagsterInstance, *,
                 resources: dict[str, Any] | None = None, cursor: str | None = None) -> None:  # fmt: skip
        self.defs, self.sensor = defs, defs.resolve_sensor_def(sensor_name)
        self.instance, self.cursor = instance, cursor
        self.resources = resources if resources is not None else dict(defs.resources or {})
        self.history: list[SensorExecutionData] = []
        #: The log key of each tick, in order (what the daemon stores on a tick).
        self.log_keys: list[list[str]] = []
        self._run_id = uuid.uuid4().hex[:8]

    def tick(self) -> SensorExecutionData:
        # build_sensor_context takes no log_key (it would reuse one within a second), so the
        # context is built as the daemon builds it; build_resources wraps plain resources.
        log_key = ["sensor_ticker", self._run_id, self.sensor.name, str(len(self.log_keys))]
        self.log_keys.append(log_key)
        with dg.SensorEvaluationContext(
            instance_ref=self.instance.get_ref(), cursor=self.cursor, log_key=log_key,
            repository_name=self.defs.get_repository_def().name, instance=self.instance,
            sensor_name=self.sensor.name, resources=self.resources, definitions=self.defs,
        ) as context:  # fmt: skip
            data = self.sensor.evaluate_tick(context)
        # The daemon names the job of a single-target sensor's requests at launch; so do we.
        targets = self.sensor.targets
        if data.run_requests and len(targets) == 1:
            job = targets[0].job_name
            requests = [r if r.job_name else r.with_replaced_attrs(job_name=job)
                        for r in data.run_requests]  # fmt: skip
            data = replace(data, run_requests=requests)
        if data.cursor is not None:
            self.cursor = data.cursor
        self.history.append(data)
        return data

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
        # The stored message is prefixed "<repository> - <sensor> - " by Dagster's logger.
        prefix = f"{self.defs.get_repository_def().name} - {self.sensor.name} - "
        records = self.log_records(tick)
        return [(str(r.get("levelname")), str(r["msg"]).removeprefix(prefix)) for r in records]
