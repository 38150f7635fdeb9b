"""Definitions shared by the sensor test suites: wired the way a user wires them.

The evaluation asset and report job are stand-ins: ``evaluate_tick`` never executes them, it
only resolves the run requests the sensors make for them.
"""

import dagster as dg

from rl_sessions_dagster import CHECKPOINT_ASSET_SPEC, CHECKPOINT_PARTITIONS


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS, deps=[CHECKPOINT_ASSET_SPEC])
def evaluation() -> None:
    """Stands in for a user's evaluation asset, one partition per checkpoint."""


evaluation_job = dg.define_asset_job("evaluation_job", selection=[evaluation])


@dg.op
def report() -> None:
    """Stands in for a user's report / alert / clean-up step."""


@dg.job
def report_job() -> None:
    report()
