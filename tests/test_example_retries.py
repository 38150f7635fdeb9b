"""The example's evaluation heals from transient inference failures.

Each evaluation makes 20 chat calls. With a few percent of them failing (503s and 429s
injected by the simulator), an evaluation without retries fails most of the time (the positive
control below shows it); with the resource's retry policy on each call, every checkpoint ends
evaluated, once.
"""

from collections import Counter

import dagster as dg
import pytest

from example_repo.definitions import EVAL_KEY, checkpoint_evaluation
from example_repo.evaluation import evaluate_model
from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api import RetryPolicy, TogetherRLError
from rl_sessions_dagster.api.errors import ServerError
from rl_sessions_dagster.testing import RLSimulator

API_KEY = "sk-eval-CANARY-5150"
pytestmark = pytest.mark.sim(api_key=API_KEY, seed=21)
CHAT = "POST /v1/chat/completions"


def checkpoints(sim: RLSimulator, n: int) -> list[str]:
    sessions = [sim.world.create_session(display_name=f"eval-{i}") for i in range(2)]
    out = []
    for i in range(n):
        sid = sessions[i % 2]
        sim.world.advance_steps(sid, 10)
        out.append(sim.world.add_inference_checkpoint(sid))
    return out


def inject_inference_faults(sim: RLSimulator) -> list:
    return [
        sim.faults.add(CHAT, status=503, rate=0.04),
        sim.faults.add(CHAT, status=429, retry_after=0.01, rate=0.02),
    ]


def test_without_retries_most_evaluations_fail(sim) -> None:
    """Positive control: the injected faults are enough to break unretried evaluations."""
    ids = checkpoints(sim, 8)
    inject_inference_faults(sim)
    failures = 0
    for cid in ids:
        with TogetherRLResource(api_key=API_KEY, base_url=sim.base_url).get_client() as client:
            name = client.get_checkpoint(cid).inference_registration.deployable_model
        try:
            evaluate_model(sim.base_url, API_KEY, name, retry=RetryPolicy(max_attempts=1))
        except (ServerError, TogetherRLError):
            failures += 1
    assert failures >= 3, failures


def test_every_checkpoint_ends_evaluated_despite_inference_faults(sim) -> None:
    ids = checkpoints(sim, 8)
    rules = inject_inference_faults(sim)
    resource = TogetherRLResource(
        api_key=API_KEY,
        base_url=sim.base_url,
        backoff_initial=0.01,
        backoff_max=0.05,
        backoff_jitter=0.01,
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("together_rl_checkpoints", ids)
        run_ids = []
        for cid in ids:
            result = dg.materialize(
                [checkpoint_evaluation],
                partition_key=cid,
                instance=instance,
                resources={"together": resource},
            )
            assert result.success
            run_ids.append(result.run_id)
        mats = instance.fetch_materializations(EVAL_KEY, limit=100).records
        per_partition = Counter(m.asset_materialization.partition for m in mats)
        assert per_partition == Counter({cid: 1 for cid in ids})
        # Every evaluation asked all its questions and got answers (nothing skipped).
        assert {m.asset_materialization.metadata["questions"].value for m in mats} == {20}
        # The faults really fired, and not a single step needed a step-level retry.
        assert sum(rule.applied for rule in rules) >= 5
        retried = [
            e
            for run_id in run_ids
            for e in instance.all_logs(run_id)
            if e.dagster_event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY
        ]
        assert retried == []
