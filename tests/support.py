"""Definitions shared by the test suites, wired the way a user wires them, and the resource of a
simulator.

The evaluation asset and report job are stand-ins: ``evaluate_tick`` never executes them, it
only resolves the run requests the sensors make for them.
"""

import subprocess
import sys
from typing import Any

import dagster as dg

from rl_sessions_dagster import CHECKPOINT_ASSET_SPEC, CHECKPOINT_PARTITIONS, TogetherRLResource
from rl_sessions_dagster.testing import RLSimulator


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


def sim_resource(sim: RLSimulator, **options: Any) -> TogetherRLResource:
    """``TogetherRLResource`` pointed at ``sim``, with the key it accepts (unless ``api_key`` is
    given)."""
    return TogetherRLResource(**{"api_key": sim.api_key, "base_url": sim.base_url, **options})


def modules_after(code: str) -> set[str]:
    """Every module loaded after running ``code`` in a fresh interpreter (import checks must not
    see what the test process already imported)."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())
