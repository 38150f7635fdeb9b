"""Shared helpers for the reliability tests: definitions wired like a user's, the public
``SensorTicker`` recording every tick (time, result or exception), and instance queries.

The key is recognisable on purpose: every test here may grep for it.
"""

import time
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pytest
from dagster._core.definitions.sensor_definition import SensorExecutionData

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    TogetherRLResource,
)
from rl_sessions_dagster.testing.daemon import FINISHED_TICKS, sensor_ticks, wait_for  # noqa: F401
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

from ..support import evaluation, evaluation_job, report, report_job  # noqa: F401 (re-exported)

API_KEY = "sk-live-CANARY-7c1f2b9e"


def fast_retry_options(**overrides) -> dict:
    """The resource's retry knobs set small, so faulty ticks stay short."""
    options = {
        "max_attempts": 2,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
        "retry_after_cap": 0.1,
        "request_timeout": 0.5,
    }
    options.update(overrides)
    return options


def make_resource(base_url: str, *, api_key: str | None = API_KEY, **overrides):
    return TogetherRLResource(api_key=api_key, base_url=base_url, **fast_retry_options(**overrides))


def make_defs(
    base_url: str, sensors: list[dg.SensorDefinition], *, api_key: str | None = API_KEY, **kw
) -> dg.Definitions:
    return dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, evaluation],
        jobs=[evaluation_job, report_job],
        sensors=sensors,
        resources={"together": make_resource(base_url, api_key=api_key, **kw)},
    )


@dataclass
class TickRecord:
    seconds: float
    data: SensorExecutionData | None = None
    error: BaseException | None = None
    cursor_before: str | None = None


class RecordingTicker(SensorTicker):
    """The public ``SensorTicker``, also recording each tick: how long it took, its result or
    the exception it raised (``tick(raise_errors=False)`` goes on like the daemon, which keeps
    the cursor on a FAILURE tick), so a soak can check every tick afterwards."""

    def __init__(self, defs: dg.Definitions, sensor_name: str, instance: dg.DagsterInstance):
        super().__init__(defs, sensor_name, instance)
        self.records: list[TickRecord] = []

    def tick(self, *, raise_errors: bool = True) -> SensorExecutionData:  # type: ignore[override]
        record = TickRecord(0.0, cursor_before=self.cursor)
        started = time.monotonic()
        try:
            record.data = super().tick()
        except Exception as exc:
            record.error = exc
            if raise_errors:
                raise
        finally:
            record.seconds = time.monotonic() - started
            self.records.append(record)
        return record.data  # type: ignore[return-value]

    @property
    def run_requests(self) -> list[dg.RunRequest]:
        return [r for data in self.history for r in data.run_requests or []]

    @property
    def errors(self) -> list[BaseException]:
        return [rec.error for rec in self.records if rec.error is not None]


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": API_KEY, "seed": 11}


# --- the real daemon ----------------------------------------------------------------------------


#: Finished well: the public test kit's default (kept as a name for these tests).
FINISHED_TICK = FINISHED_TICKS


@pytest.fixture
def shared_ssl_context(monkeypatch):
    """One TLS context for every httpx client of the test.

    The resource builds a fresh httpx client per tick, and httpx loads the CA bundle for each
    one (about 25 ms here) even though the simulator is plain http on loopback. Hundreds of
    ticks pay that for nothing, so a soak shares one context; the code under test is unchanged.
    """
    import httpx._transports.default as transport

    real = transport.create_ssl_context
    cache: dict = {}

    def cached(verify=True, cert=None, trust_env=True):
        key = (verify if isinstance(verify, (bool, str)) else id(verify), cert, trust_env)
        if key not in cache:
            cache[key] = real(verify=verify, cert=cert, trust_env=trust_env)
        return cache[key]

    monkeypatch.setattr(transport, "create_ssl_context", cached)


@pytest.fixture
def small_jitter(monkeypatch):
    """Retry jitter of 10 ms instead of the fixed 0.5 s.

    ``TogetherRLResource`` exposes ``backoff_initial``/``backoff_max`` but not ``jitter``, so
    every retry sleeps up to 0.5 s more whatever ``backoff_max`` says. With one request in five
    failing that would dominate a soak's wall time; the retry logic itself is unchanged.
    """
    import functools

    import rl_sessions_dagster.resource.together_rl as resource_module
    from rl_sessions_dagster.api import RetryPolicy

    monkeypatch.setattr(resource_module, "RetryPolicy", functools.partial(RetryPolicy, jitter=0.01))
