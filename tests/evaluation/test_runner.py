"""The runner against the simulator over real HTTP: every answer graded as the simulator's own
oracle says, scores rising with the step, faults healed by retries, failures named."""

import pytest

from rl_sessions_dagster.api.errors import ServerError
from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.evaluation.dataset import load_dataset
from rl_sessions_dagster.evaluation.graders import resolve_grader
from rl_sessions_dagster.evaluation.runner import (
    EvaluationFailed,
    percentile,
    run_evaluation,
)
from rl_sessions_dagster.testing.simulator.endpoints import answer as oracle

from .conftest import KEY, checkpoint_model

ITEMS = [{"a": a, "b": b, "expected": a + b} for a in range(11, 19) for b in range(31, 36)]
TEMPLATE = "What is {a} + {b}? Answer with the number only."


def dataset():
    return load_dataset(items=ITEMS, prompt_template=TEMPLATE)


def spec(**knobs):
    """How to run: the spec's knobs, its defaults for the rest."""
    return EvaluationSpec(items=ITEMS, prompt_template=TEMPLATE, **knobs)


def test_scores_match_the_simulator_and_rise_with_the_step(sim, client):
    ds = dataset()
    scores = []
    for step in (0, 400):
        _, model = checkpoint_model(sim, client, step)
        result = run_evaluation(client, model, ds, [resolve_grader("numeric")],
                                spec(concurrency=8))  # fmt: skip
        truth = sum(
            oracle(sim.world.seed, model, step, i.prompt) == f"The answer is {i.expected}."
            for i in ds.items
        )
        assert result.passed == truth and result.calls == len(ds) == 40
        assert result.failed + result.passed == 40 and result.unreadable == 0
        assert result.score == truth / 40 == result.grader_scores["numeric"]
        assert [r.verdict for r in result.rows] == sorted(
            (r.verdict for r in result.rows), key=["fail", "unreadable", "pass"].index
        )
        assert result.prompt_tokens > 0 and result.completion_tokens > 0
        scores.append(result.score)
    assert scores[1] > scores[0]


def test_samples_cost_and_percentiles(sim, client):
    _, model = checkpoint_model(sim, client, 10)
    settings = spec(samples=3, concurrency=4, price_prompt_per_million=2.0,
                    price_completion_per_million=6.0)  # fmt: skip
    result = run_evaluation(client, model, dataset(), [resolve_grader("numeric")], settings)
    assert result.calls == 120 and len(result.rows) == 120
    expected_cost = (result.prompt_tokens * 2.0 + result.completion_tokens * 6.0) / 1e6
    assert result.cost_usd == pytest.approx(expected_cost)
    assert 0 < result.latency_p50_s <= result.latency_p95_s


def test_unreadable_answers_are_counted_not_failed(sim, client):
    _, model = checkpoint_model(sim, client, 10)
    graders = [resolve_grader("numeric"), resolve_grader({"type": "json_field", "path": "x"})]
    result = run_evaluation(client, model, dataset(), graders, spec(concurrency=4))
    assert result.grader_unreadable == {"numeric": 0, "json_field": 40}
    assert result.grader_scores["json_field"] is None
    # overall: a numeric failure stays a failure; a numeric pass with unreadable JSON is unreadable
    assert result.failed + result.unreadable == 40 and result.passed == 0
    assert result.score == 0.0


def test_five_percent_faults_every_item_still_answered(sim, client, sleeps):
    _, model = checkpoint_model(sim, client, 10)
    sim.faults.add("POST /v1/chat/completions", status=503, rate=0.05)
    sim.faults.add("POST /v1/chat/completions", status=429, retry_after=1, rate=0.02)
    items = [dict(i, id=f"{n}") for n, i in enumerate(ITEMS * 5)]
    big = load_dataset(items=items, prompt_template=TEMPLATE)
    result = run_evaluation(client, model, big, [resolve_grader("numeric")],
                            spec(concurrency=16))  # fmt: skip
    assert result.calls == 200 and result.passed + result.failed == 200
    assert sum(r.fault is not None for r in sim.requests.records()) == len(sleeps) > 0


def test_progress_is_reported_while_calls_are_outstanding(sim, client, sleeps):
    """Counted, never timed: reports arrive while a slow endpoint answers, their counts only
    grow, and the attempts the client retried are the errors."""
    _, model = checkpoint_model(sim, client, 10)
    sim.faults.add("POST /v1/chat/completions", status=503, times=2)
    sim.faults.add("POST /v1/chat/completions", delay_s=0.05)
    reports = []
    small = load_dataset(items=ITEMS[:6], prompt_template=TEMPLATE)
    result = run_evaluation(client, model, small, [resolve_grader("numeric")],
                            spec(concurrency=1), on_progress=reports.append,
                            progress_seconds=0.01)  # fmt: skip
    assert result.calls == 6 and len(reports) >= 3
    assert [r.done for r in reports] == sorted(r.done for r in reports)
    assert {r.total for r in reports} == {6} and reports[-1].errors == len(sleeps) == 2
    assert reports[-1].line().startswith(f"evaluating {model}: ")


def test_endpoint_that_keeps_failing_fails_the_run_naming_the_model(sim, client):
    _, model = checkpoint_model(sim, client, 10)
    sim.faults.add("POST /v1/chat/completions", status=503)
    with pytest.raises(EvaluationFailed, match=f"model '{model}'.*after 4 attempt") as info:
        run_evaluation(client, model, dataset(), [resolve_grader("numeric")],
                       spec(concurrency=4))  # fmt: skip
    assert isinstance(info.value.cause, ServerError)
    assert KEY not in str(info.value) and KEY not in repr(info.value.cause.__dict__)
    # the rest were cancelled: far fewer attempts than 40 items x 4
    assert len(sim.requests.records(template="/v1/chat/completions")) < 40


def test_call_cap_refuses_before_any_call(sim, client):
    with pytest.raises(EvaluationFailed, match="max_calls=10"):
        run_evaluation(client, "m", dataset(), [resolve_grader("numeric")],
                       spec(max_calls=10))  # fmt: skip
    assert not sim.requests.records(template="/v1/chat/completions")


def test_spec_load_then_run(sim, client, tmp_path):
    path = tmp_path / "arith.jsonl"
    path.write_text("".join(f'{{"prompt": "What is {a} + 1?", "expected": {a + 1}}}\n'
                            for a in range(10)))  # fmt: skip
    loaded = EvaluationSpec(dataset="arith.jsonl", graders=["numeric", "contains"],
                            concurrency=3).load(tmp_path)  # fmt: skip
    _, model = checkpoint_model(sim, client, 50)
    result = run_evaluation(client, model, loaded.dataset, loaded.graders, loaded.spec)
    assert set(result.grader_scores) == {"numeric", "contains"} and result.calls == 10


def test_percentile():
    assert percentile([], 0.5) == 0.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([1.0, 2.0], 0.95) == pytest.approx(1.95)
