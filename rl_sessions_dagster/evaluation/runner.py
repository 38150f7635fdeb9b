"""``EvaluationSpec`` (Python and YAML), checked whole by ``load``, and ``run_evaluation``. A call
failing after the client's retries fails the run: a score over the rest would measure otherwise."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..api import RLSessionsClient
from ..api.errors import TogetherRLError
from .dataset import Dataset, DatasetError, EvalItem, item_error, load_dataset
from .graders import Grade, Grader, GraderSpec, Verdict, resolve_grader

__all__ = [
    "EvaluationFailed",
    "EvaluationResult",
    "EvaluationSpec",
    "ItemResult",
    "LoadedEvaluation",
    "Progress",
    "run_evaluation",
]


@dataclass(frozen=True)
class LoadedEvaluation:
    """A spec made real: validated items and built graders."""

    dataset: Dataset
    graders: tuple[Grader, ...]
    spec: EvaluationSpec


class EvaluationSpec(BaseModel):
    """A dataset, graders and how to run them against each checkpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    dataset: str | None = Field(
        default=None,
        description="JSONL file of items, one JSON object per line (relative paths: from the "
        "defs.yaml folder in YAML, from base_dir in Python). Give this or items.",
    )
    items: list[dict[str, Any]] | None = Field(
        default=None,
        description="Items inline: {messages: [...]} or {prompt: ...} or template fields, "
        "each with expected (and optionally id). Give this or dataset.",
    )
    prompt_template: str | None = Field(
        default=None,
        description="Prompt for items without messages/prompt, filled from their fields, e.g. "
        "'What is {a} + {b}? Answer with the number only.'",
    )
    system_prompt: str | None = Field(
        default=None, description="System message put before items that have none."
    )
    graders: list[str | GraderSpec] = Field(
        default_factory=lambda: list[str | GraderSpec](["exact"]),
        min_length=1,
        description="exact, contains, regex, numeric, json_field, or 'package.module:function'"
        "; or a mapping with type and options (e.g. {type: numeric, abs_tol: 0.01}).",
    )
    samples: int = Field(default=1, ge=1, le=100, description="Answers asked per item.")
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(default=256, ge=1, le=32768, description="Most tokens per answer.")
    concurrency: int = Field(
        default=8, ge=1, le=64, description="Chat calls in flight at once (one thread each)."
    )
    max_calls: int | None = Field(
        default=10_000,
        ge=1,
        description="Most chat calls one evaluation may make (items x samples must fit; "
        "checked when the definitions load). Retries of a call do not count. null: no cap.",
    )
    timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds per call, retries and waits included."
    )
    price_prompt_per_million: float = Field(
        default=0.0, ge=0, description="USD per million prompt tokens (estimated cost)."
    )
    price_completion_per_million: float = Field(
        default=0.0, ge=0, description="USD per million completion tokens (estimated cost)."
    )
    tolerance: float = Field(
        default=0.05, ge=0, le=1, description="Largest score drop below a baseline that passes."
    )
    table_rows: int = Field(
        default=50, ge=0, le=1000, description="Items shown in the results table (failures first)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> EvaluationSpec:
        if (self.dataset is None) == (self.items is None):
            raise ValueError("give exactly one of dataset (a JSONL file) or items (inline)")
        return self

    def check_cap(self, dataset: Dataset, error: Callable[[str], Exception] = ValueError) -> None:
        """Raise ``error`` (ValueError) when the dataset needs more calls than ``max_calls``."""
        needed = len(dataset) * self.samples
        if self.max_calls is not None and needed > self.max_calls:
            raise error(
                f"{len(dataset)} items x {self.samples} samples = {needed} calls, more than "
                f"max_calls={self.max_calls}"
            )

    def load(self, base_dir: str | Path | None = None) -> LoadedEvaluation:
        """DatasetError names a bad line (or too many calls); ValueError a bad grader."""
        dataset = load_dataset(
            self.dataset,
            self.items,
            prompt_template=self.prompt_template,
            system_prompt=self.system_prompt,
            base_dir=base_dir,
        )
        graders = tuple(resolve_grader(g) for g in self.graders)
        names = [g.name for g in graders]
        if len(set(names)) != len(names):
            raise ValueError(f"grader names must be unique (give name:), got {names}")
        inline = self.items is not None
        for item in dataset.items:
            for grader in graders:
                if (problem := grader.check(item)) is not None:
                    raise item_error(problem, dataset.source, item.line or 0, inline)
        self.check_cap(dataset, lambda message: DatasetError(message, source=dataset.source))
        return LoadedEvaluation(dataset, graders, self)


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
    grades: dict[str, Grade]
    latency_s: float
    prompt_tokens: int
    completion_tokens: int

    @property
    def verdict(self) -> Verdict:
        """The worst of the graders' verdicts."""
        return min((g.verdict for g in self.grades.values()), key=_ORDER.__getitem__)


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
    """Ask every item ``spec.samples`` times; ``clock``: the client's retry clock (deadlines are on
    it). EvaluationFailed: a call failed after its retries, or the calls would exceed max_calls."""
    if not graders:
        raise ValueError("an evaluation needs at least one grader")
    spec.check_cap(dataset, lambda message: EvaluationFailed(f"call cap: {message}"))
    started = time.perf_counter()
    stop = threading.Event()
    retried = client.stats.retries

    def report(futures: Sequence[Future[ItemResult]]) -> Progress:
        finished = [f for f in futures if f.done()]
        verdicts = [f.result().verdict for f in finished if f.exception() is None]
        return Progress(
            model,
            len(finished),
            len(futures),
            client.stats.retries - retried,
            verdicts.count("fail"),
            verdicts.count("unreadable"),
            time.perf_counter() - started,
        )

    def ask(item: EvalItem, sample: int) -> ItemResult:
        if stop.is_set():
            raise _Cancelled
        try:
            out = client.chat_completion(
                model,
                [dict(m) for m in item.messages],
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
                deadline=clock() + spec.timeout_seconds,
            )
        except BaseException:
            stop.set()  # the queued calls are dropped now, not when the main thread next runs
            raise
        grades = {g.name: g.grade(out.text, item) for g in graders}
        return ItemResult(
            item, sample, out.text, grades, out.latency_s, out.prompt_tokens, out.completion_tokens
        )

    pool = ThreadPoolExecutor(spec.concurrency, thread_name_prefix="rl-eval")
    try:
        futures = [pool.submit(ask, it, s) for it in dataset.items for s in range(spec.samples)]
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
    cost = (
        prompt * spec.price_prompt_per_million + completion * spec.price_completion_per_million
    ) / 1e6
    rows = sorted(results, key=lambda r: (_ORDER[r.verdict], r.item.line or 0, r.sample))
    return EvaluationResult(
        model=model,
        score=_score(count["pass"], count["fail"]),
        grader_scores=per_grader,
        passed=count["pass"],
        failed=count["fail"],
        unreadable=count["unreadable"],
        rows=rows,
        latency_p50_s=percentile(latencies, 0.5),
        latency_p95_s=percentile(latencies, 0.95),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
        calls=len(results),
        wall_seconds=time.perf_counter() - started,
        grader_unreadable=unreadable,
    )


class _Cancelled(Exception):
    """A queued call skipped because another one failed."""
