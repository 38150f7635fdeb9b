"""Run a dataset against a model: ``concurrency`` threads share one client (``httpx.Client`` is
thread-safe). A call that still fails after the client's retries fails the whole evaluation: a
score over the items that happened to answer would be a different measurement."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from ..api import RLSessionsClient
from ..api.errors import TogetherRLError
from .dataset import Dataset, EvalItem
from .graders import Grade, Grader, Verdict
from .spec import EvaluationSpec

__all__ = ["EvaluationFailed", "EvaluationResult", "ItemResult", "Progress", "run_evaluation"]


class EvaluationFailed(RuntimeError):
    """Inference kept failing, or the run would pass its call cap; ``cause``: the client's error."""

    def __init__(self, message: str, *, cause: TogetherRLError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class ItemResult:
    """One answer (item x sample), its verdict overall and per grader."""

    item: EvalItem
    sample: int
    answer: str
    verdict: Verdict
    grades: dict[str, Grade]
    latency_s: float
    prompt_tokens: int
    completion_tokens: int


_ORDER: dict[str, int] = {"fail": 0, "unreadable": 1, "pass": 2}


@dataclass(frozen=True)
class EvaluationResult:
    """``score`` is passed / (passed + failed): unreadable answers are not failures (None: nothing
    was readable). ``rows`` are ordered failures first, then unreadable, then passes."""

    model: str
    score: float | None
    grader_scores: dict[str, float | None]
    passed: int
    failed: int
    unreadable: int
    rows: list[ItemResult]
    latency_p50_s: float
    latency_p95_s: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    calls: int
    wall_seconds: float
    grader_unreadable: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """How far a running evaluation is. ``errors`` counts the attempts the client retried."""

    model: str
    done: int
    total: int
    errors: int
    failed: int
    unreadable: int
    elapsed_s: float

    @property
    def rate(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def line(self) -> str:
        eta = f", about {(self.total - self.done) / self.rate:.0f} s left" if self.rate else ""
        return (
            f"evaluating {self.model}: {self.done}/{self.total} answers, {self.errors} "
            f"error(s), {self.failed} failed, {self.unreadable} unreadable, "
            f"{self.rate:.2f} items/s after {self.elapsed_s:.0f} s{eta}"
        )


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _score(passed: int, failed: int) -> float | None:
    return passed / (passed + failed) if passed + failed else None


def run_evaluation(
    client: RLSessionsClient,
    model: str,
    dataset: Dataset,
    graders: Sequence[Grader],
    spec: EvaluationSpec,
    *,
    clock: Callable[[], float] = time.monotonic,
    on_progress: Callable[[Progress], None] | None = None,
    progress_seconds: float = 10.0,
) -> EvaluationResult:
    """Ask every item ``spec.samples`` times and grade each answer with every grader.
    ``clock`` must be the client's retry clock (deadlines are absolute on it); ``on_progress``
    hears how far the run is every ``progress_seconds``. EvaluationFailed: a call failed after its
    retries (the rest are cancelled), or items x samples exceeds ``max_calls`` (before any call)."""
    if not graders:
        raise ValueError("an evaluation needs at least one grader")
    try:
        spec.check_cap(dataset)
    except ValueError as exc:
        raise EvaluationFailed(f"call cap: {exc}") from None
    started = time.perf_counter()
    stop = threading.Event()
    retried = client.stats.retries

    def report(futures: Sequence[Future[ItemResult]]) -> Progress:
        finished = [f for f in futures if f.done()]
        verdicts = [f.result().verdict for f in finished if f.exception() is None]
        return Progress(model, len(finished), len(futures), client.stats.retries - retried,
                        verdicts.count("fail"), verdicts.count("unreadable"),
                        time.perf_counter() - started)  # fmt: skip

    def ask(item: EvalItem, sample: int) -> ItemResult:
        if stop.is_set():
            raise _Cancelled
        try:
            out = client.chat_completion(
                model, [dict(m) for m in item.messages], temperature=spec.temperature,
                max_tokens=spec.max_tokens, deadline=clock() + spec.timeout_seconds,
            )  # fmt: skip
        except BaseException:
            stop.set()  # the queued calls are dropped now, not when the main thread next runs
            raise
        grades = {g.name: g.grade(out.text, item) for g in graders}
        verdict = min((g.verdict for g in grades.values()), key=_ORDER.__getitem__)
        return ItemResult(item, sample, out.text, verdict, grades, out.latency_s,
                          out.prompt_tokens, out.completion_tokens)  # fmt: skip

    jobs = [(item, s) for item in dataset.items for s in range(spec.samples)]
    pool = ThreadPoolExecutor(spec.concurrency, thread_name_prefix="rl-eval")
    try:
        futures: list[Future[ItemResult]] = [pool.submit(ask, it, s) for it, s in jobs]
        every = max(progress_seconds, 0.01)
        while wait(futures, every, return_when=FIRST_EXCEPTION).not_done and not stop.is_set():
            if on_progress is not None:
                on_progress(report(futures))
    finally:
        # On a failure or an interrupt (UI terminate) only calls in flight finish (timeout_seconds).
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    errors = (f.exception() for f in futures if not f.cancelled())
    error = next((e for e in errors if e is not None and not isinstance(e, _Cancelled)), None)
    if isinstance(error, TogetherRLError):
        raise EvaluationFailed(
            f"model {model!r}: inference failed after {error.attempts} attempt(s): {error}",
            cause=error,
        ) from None
    if error is not None:
        raise error
    results = [f.result() for f in futures]

    count = {v: sum(r.verdict == v for r in results) for v in ("pass", "fail", "unreadable")}
    per_grader: dict[str, float | None] = {}
    unreadable: dict[str, int] = {}
    for g in graders:
        verdicts = [r.grades[g.name].verdict for r in results]
        per_grader[g.name] = _score(verdicts.count("pass"), verdicts.count("fail"))
        unreadable[g.name] = verdicts.count("unreadable")
    latencies = [r.latency_s for r in results]
    prompt = sum(r.prompt_tokens for r in results)
    completion = sum(r.completion_tokens for r in results)
    cost = (prompt * spec.price_prompt_per_million
            + completion * spec.price_completion_per_million) / 1e6  # fmt: skip
    rows = sorted(results, key=lambda r: (_ORDER[r.verdict], r.item.line or 0, r.sample))
    return EvaluationResult(
        model=model, score=_score(count["pass"], count["fail"]), grader_scores=per_grader,
        passed=count["pass"], failed=count["fail"], unreadable=count["unreadable"], rows=rows,
        latency_p50_s=percentile(latencies, 0.5), latency_p95_s=percentile(latencies, 0.95),
        prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost, calls=len(results),
        wall_seconds=time.perf_counter() - started, grader_unreadable=unreadable,
    )  # fmt: skip


class _Cancelled(Exception):
    """A queued call skipped because another one failed."""
