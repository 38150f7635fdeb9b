"""``build_evaluation_asset``: each registered checkpoint's model answers the dataset; a run
records the score, an items table, latency, tokens and cost; a check compares with baselines."""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from ..api.checkpoints import CheckpointNotRegisteredError, deployment_target
from ..api.errors import TogetherRLError
from ..evaluation.runner import EvaluationFailed, EvaluationResult, EvaluationSpec, LoadedEvaluation
from ..evaluation.runner import run_evaluation as run_engine
from ..partitions import (
    CHAMPION_ASSET_KEY,
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    EVALUATION_ASSET_KEY,
    checkpoint_id_for_partition,
    checkpoint_sweeps,
    latest_metadata,
    metadata_table,
    metadata_value,
    score_line,
)
from ..resource import TogetherRLResource

SCORE_CHECK_NAME = "score_not_dropping"
#: Characters of the expected answer, the answer and the grades kept per row of the items table.
_TEXT_CHARS = 200
#: Earlier partitions of the session looked at for the previous checkpoint's score.
_BASELINE_CANDIDATES = 50


@dataclass(frozen=True)
class EvaluatedCheckpoint:
    """The checkpoint a run evaluated, as the baselines need it."""

    partition_key: str
    checkpoint_id: str
    session_id: str | None
    session_label: str | None
    step: int | None
    dataset_digest: str
    score: float | None


@dataclass(frozen=True)
class Baseline:
    """A score to compare with: ``label`` names it in the check ("previous checkpoint")."""

    label: str
    score: float
    partition_key: str
    step: int | None = None


BaselineFinder = Callable[
    [dg.AssetExecutionContext, dg.AssetKey, EvaluatedCheckpoint], Baseline | None
]


def _step_of(partition_key: str) -> int | None:
    parts = partition_key.split("/")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def session_scores(
    context: dg.AssetExecutionContext, key: dg.AssetKey, current: EvaluatedCheckpoint
) -> list[tuple[str, int, float]]:
    """(partition, step, score) of the session's earlier checkpoints on the same dataset, latest
    first; candidates come from the partition keys, so one event-log query serves any history."""
    if current.session_label is None or current.step is None:
        return []
    prefix = f"{current.session_label}/"
    name = getattr(context.assets_def.partitions_def, "name", None) or CHECKPOINT_PARTITIONS.name
    earlier = [
        (s, k)
        for k in context.instance.get_dynamic_partitions(name)
        if k.startswith(prefix) and (s := _step_of(k)) is not None and s < current.step
    ]
    candidates = sorted(earlier, reverse=True)[:_BASELINE_CANDIDATES]
    latest = latest_metadata(context.instance, key, [k for _, k in candidates])
    out = []
    for step, partition in candidates:
        meta = latest.get(partition) or {}
        score, digest = metadata_value(meta, "score"), metadata_value(meta, "dataset_digest")
        same = metadata_value(meta, "session_id") == current.session_id
        if same and digest == current.dataset_digest and isinstance(score, float):
            out.append((partition, step, score))
    return out


def previous_checkpoint_baseline(
    context: dg.AssetExecutionContext, key: dg.AssetKey, current: EvaluatedCheckpoint
) -> Baseline | None:
    """The latest evaluation, on the same dataset, of the session's closest earlier checkpoint."""
    for partition, step, score in session_scores(context, key, current)[:1]:
        return Baseline("previous checkpoint", score, partition, step)
    return None


def champion_baseline(
    key: dg.AssetKey = CHAMPION_ASSET_KEY,
    *,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
    separator: str = "-",
) -> BaselineFinder:
    """The sweep's champion (``key``), when another checkpoint with metric ``score``, higher better."""

    def _champion(
        context: dg.AssetExecutionContext, _: dg.AssetKey, current: EvaluatedCheckpoint
    ) -> Baseline | None:
        instance = context.instance
        partition = current.partition_key
        sweep = checkpoint_sweeps(
            instance, [partition], checkpoint_asset_key=checkpoint_asset_key, separator=separator
        )[partition]
        meta = latest_metadata(instance, key, [sweep]).get(sweep) or {}
        score, champion = metadata_value(meta, "score"), metadata_value(meta, "champion_partition")
        if metadata_value(meta, "metric") != "score" or not isinstance(score, float):
            return None
        if metadata_value(meta, "direction") != "higher" or not champion or champion == partition:
            return None
        step = metadata_value(meta, "step")
        return Baseline("sweep champion", score, champion, step if isinstance(step, int) else None)

    return _champion


_ITEM_COLUMNS: dict[str, str | tuple[str, str]] = {
    "item": "string",
    "sample": "int",
    "verdict": ("string", "fail, unreadable or pass"),
    "expected": "string",
    "answer": "string",
    "graders": ("string", "each grader's verdict and detail"),
    "latency_ms": "float",
}


def _table(result: "EvaluationResult", rows: int) -> dg.MetadataValue:
    records = []
    for r in result.rows[:rows]:
        grades = "; ".join(
            f"{name}: {g.verdict}" + (f" ({g.detail})" if g.detail else "")
            for name, g in r.grades.items()
        )
        expected = r.item.expected
        expected = expected if isinstance(expected, str) else json.dumps(expected)
        texts = [t[:_TEXT_CHARS] for t in (expected, r.answer, grades)]
        records.append((r.item.id, r.sample, r.verdict, *texts, round(r.latency_s * 1000, 1)))
    return metadata_table(_ITEM_COLUMNS, records)


def evaluation_metadata(
    result: "EvaluationResult", loaded: LoadedEvaluation, current: EvaluatedCheckpoint
) -> dict[str, Any]:
    """Everything the evaluation measured (no secrets: the model name, ids and counts only)."""
    meta: dict[str, Any] = {}
    if result.score is not None:
        meta["score"] = dg.MetadataValue.float(result.score)
        if current.session_label:
            meta[f"score {current.session_label}"] = dg.MetadataValue.float(result.score)
    meta.update({f"score [{n}]": v for n, v in result.grader_scores.items() if v is not None})
    meta.update(
        {n: dg.MetadataValue.int(getattr(result, n)) for n in ("passed", "failed", "unreadable")},
        answers=dg.MetadataValue.int(result.calls),
        items=_table(result, loaded.spec.table_rows),
        latency_p50_ms=dg.MetadataValue.float(round(result.latency_p50_s * 1000, 2)),
        latency_p95_ms=dg.MetadataValue.float(round(result.latency_p95_s * 1000, 2)),
        prompt_tokens=dg.MetadataValue.int(result.prompt_tokens),
        completion_tokens=dg.MetadataValue.int(result.completion_tokens),
        total_tokens=dg.MetadataValue.int(result.prompt_tokens + result.completion_tokens),
        estimated_cost_usd=dg.MetadataValue.float(round(result.cost_usd, 6)),
        wall_seconds=dg.MetadataValue.float(round(result.wall_seconds, 3)),
        model=dg.MetadataValue.text(result.model),
        checkpoint_id=dg.MetadataValue.text(current.checkpoint_id),
        session_id=dg.MetadataValue.text(current.session_id or ""),
        dataset=dg.MetadataValue.text(loaded.dataset.source),
        dataset_digest=dg.MetadataValue.text(current.dataset_digest),
    )
    if current.step is not None:
        meta["step"] = dg.MetadataValue.int(current.step)
    meta.update({f"unreadable [{n}]": c for n, c in result.grader_unreadable.items() if c})
    return meta


def build_evaluation_asset(
    spec: EvaluationSpec | LoadedEvaluation,
    *,
    key: dg.AssetKey | str | Sequence[str] = EVALUATION_ASSET_KEY,
    resource_key: str = "together",
    partitions_def: dg.DynamicPartitionsDefinition = CHECKPOINT_PARTITIONS,
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY,
    base_dir: str | Path | None = None,
    group_name: str | None = "together_rl",
    check_name: str = SCORE_CHECK_NAME,
    check_severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.WARN,
    baselines: Sequence[BaselineFinder] = (previous_checkpoint_baseline,),
    retry_policy: dg.RetryPolicy | None = dg.RetryPolicy(
        max_retries=2, delay=10, backoff=dg.Backoff.EXPONENTIAL
    ),
    description: str | None = None,
    progress_seconds: float = 10.0,
) -> dg.AssetsDefinition:
    """A checkpoint-partitioned asset evaluating each registered checkpoint, with a score check.
    ``spec`` is loaded now, so a bad dataset fails the definitions' load, not a run."""
    loaded = spec if isinstance(spec, LoadedEvaluation) else spec.load(base_dir)
    asset_key = dg.AssetKey.from_coercible(key)
    tolerance = loaded.spec.tolerance
    finders = list(baselines)  # read at every run: not a one-shot iterator

    def _check(
        context: dg.AssetExecutionContext, current: EvaluatedCheckpoint
    ) -> dg.AssetCheckResult:
        meta: dict[str, Any] = {"tolerance": tolerance}
        passed = current.score is not None
        if current.score is None:
            meta["reason"] = "no answer could be graded (all unreadable)"
        else:
            meta["score"] = current.score
        for base in filter(None, (find(context, asset_key, current) for find in finders)):
            meta[f"{base.label} score"] = base.score
            meta[f"{base.label} partition"] = base.partition_key
            if current.score is not None:
                drop = base.score - current.score
                meta[f"drop vs {base.label}"] = round(drop, 6)
                passed = passed and drop <= tolerance + 1e-12
        return dg.AssetCheckResult(
            check_name=check_name, passed=passed, severity=check_severity, metadata=meta
        )

    @dg.asset(
        key=asset_key,
        partitions_def=partitions_def,
        deps=[checkpoint_asset_key],
        group_name=group_name,
        kinds={"together", "python"},
        required_resource_keys={resource_key},
        retry_policy=retry_policy,
        description=description
        or f"Score of each registered checkpoint on {loaded.dataset.source} "
        f"({len(loaded.dataset)} items, graders {', '.join(g.name for g in loaded.graders)}).",
        check_specs=[
            dg.AssetCheckSpec(
                check_name,
                asset=asset_key,
                description=f"Fails when the score drops more than {tolerance:g} below a "
                "baseline: the previous checkpoint of the same session.",
            )
        ],
    )
    def _evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        partition = context.partition_key
        checkpoint_id = checkpoint_id_for_partition(
            context, checkpoint_asset_key=checkpoint_asset_key
        )
        where = f"checkpoint {checkpoint_id} (partition {partition})"
        with resource.get_client() as client:
            checkpoint = client.get_checkpoint(checkpoint_id)
            try:
                model = deployment_target(checkpoint).inference_model or ""
            except CheckpointNotRegisteredError as exc:
                raise dg.Failure(f"{where}: {exc}", allow_retries=False) from None
            calls = len(loaded.dataset) * loaded.spec.samples
            context.log.info(
                f"{where}: asking {model} {calls} time(s), {loaded.spec.concurrency} at a time"
            )
            try:
                result = run_engine(
                    client,
                    model,
                    loaded.dataset,
                    loaded.graders,
                    loaded.spec,
                    clock=client.retry.clock,
                    on_progress=lambda p: context.log.info(p.line()),
                    progress_seconds=progress_seconds,
                )
            except EvaluationFailed as exc:
                raise dg.Failure(
                    f"{where}: {exc}",
                    metadata={"checkpoint_id": checkpoint_id, "model": model},
                    allow_retries=isinstance(exc.cause, TogetherRLError),
                ) from None
        current = EvaluatedCheckpoint(
            partition_key=partition,
            checkpoint_id=checkpoint_id,
            session_id=checkpoint.session_id,
            session_label=partition.split("/")[0] if "/" in partition else None,
            step=checkpoint.step,
            dataset_digest=loaded.dataset.digest,
            score=result.score,
        )
        score = "n/a" if result.score is None else f"{result.score:.3f}"
        context.log.info(
            f"{where}: score {score} ({result.passed} passed, {result.failed} failed, "
            f"{result.unreadable} unreadable) in {result.wall_seconds:.1f} s"
        )
        metadata = evaluation_metadata(result, loaded, current)
        if result.score is not None and current.step is not None:
            points = [(step, v) for _, step, v in session_scores(context, asset_key, current)]
            line = score_line([*points, (current.step, result.score)])
            metadata["score by step"] = dg.MetadataValue.text(line)
        return dg.MaterializeResult(metadata=metadata, check_results=[_check(context, current)])

    return _evaluation
