"""The champion of each sweep: its best evaluated checkpoint, kept up to date by a sensor.

``together/sweep_champion`` is partitioned by sweep (dynamic partitions ``together_rl_sweeps``;
a sweep is the W&B group, else the display-name prefix: :func:`~..core.sweeps.sweep_name`, the
definition the spend asset uses). Each tick of the champion sensor reads the evaluation
materializations recorded since its cursor (no API call), finds each checkpoint's sweep in the
checkpoint asset's metadata (recorded by the event sensor) and folds the scores into the
sweep's candidates one evaluation at a time, in the order they landed (a re-evaluation replaces
the checkpoint's earlier score). Each change of champion is recorded as a runless
materialization of the sweep's partition (champion, registered model name, score, margin over
the runner-up, a leaderboard), so the history does not depend on how many evaluations one tick
sees. The candidates travel in that materialization: a tick reads one record per touched sweep
and the cursor stays one storage id.

Why a sensor rather than a run per evaluation: ticks are serial, so two evaluations landing
together can never race to write the same sweep; the standings are order-independent (ties go
to the earliest step, then the smallest checkpoint id).

A tick that ends with another champion than it began with requests one ``champion_changed``
run (of a job, or an asset selection run as an asset job), for the champion it ended with, so a deploy job
never races a champion already superseded. Its run key is
``champion_changed:<sweep>:<checkpoint id>:<n>`` (``n`` counts the sweep's changes): exactly
once per change, even when a re-evaluation hands the title back to an earlier champion.
"""

import json
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..core.sweeps import Candidate, ChampionRule, Standing, fold, rank, standing
from ..partitions import SWEEP_PARTITIONS
from ..partitions.jobs import Assets, Job
from ..partitions.sweeps import checkpoint_sweeps, latest_metadata, metadata_value
from .options import ChampionOptions
from .run_requests import tag_value

CHAMPION_CHANGED = "champion_changed"
#: Evaluation materializations one tick folds at most (the rest next tick).
_BATCH = 500

# --- folding evaluations into a sweep's standing, and what its partition records ---------

_LEADERBOARD_ROWS = 10


def candidate(partition: str, meta: dict[str, Any], metric: str) -> Candidate | None:
    value = metadata_value(meta, metric)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    step = metadata_value(meta, "step")
    return Candidate(
        partition=partition,
        checkpoint_id=str(metadata_value(meta, "checkpoint_id") or partition),
        value=float(value),
        step=step if isinstance(step, int) else None,
        model_name=metadata_value(meta, "model_name") or metadata_value(meta, "model") or None,
        session_id=metadata_value(meta, "session_id") or None,
    )


@dataclass
class SweepState:
    """One sweep while a tick folds its evaluations, one at a time, in landing order."""

    candidates: list[Candidate]
    champion_id: str = ""  # the champion now
    before_id: str = ""  # the champion before the latest change
    changes: int = 0
    announced_id: str = ""  # the champion when the tick began

    @classmethod
    def read(cls, meta: dict[str, Any] | None) -> "SweepState":
        if not meta:
            return cls([])
        raw = metadata_value(meta, "candidate_list") or []
        cands = [c for r in raw if isinstance(r, dict) and (c := Candidate.from_dict(r))]
        champion = str(metadata_value(meta, "champion_checkpoint_id") or "")
        return cls(
            cands, champion, str(metadata_value(meta, "previous_champion_id") or ""),
            int(metadata_value(meta, "changes") or 0), champion,
        )  # fmt: skip


def _leaderboard(ranked: list[Candidate], metric: str) -> dg.MetadataValue:
    col = dg.TableColumn
    return dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "rank": i + 1,
                    "checkpoint": c.partition,
                    metric: c.value,
                    "step": c.step if c.step is not None else -1,
                    "model_name": c.model_name or "",
                }
            )
            for i, c in enumerate(ranked[:_LEADERBOARD_ROWS])
        ],
        schema=dg.TableSchema(
            [
                col("rank", "int"),
                col("checkpoint", "string"),
                col(metric, "float"),
                col("step", "int"),
                col("model_name", "string"),
            ]
        ),
    )


def champion_metadata(
    sweep: str,
    candidates: list[Candidate],
    result: Standing,
    rule: ChampionRule,
    *,
    previous_id: str,
    changes: int,
    changed: bool,
) -> dict[str, Any]:
    """What the sweep's partition shows: champion, model, score, margin, leaderboard."""
    champ, runner = result.champion, result.runner_up
    meta: dict[str, Any] = {
        "sweep": dg.MetadataValue.text(sweep),
        "metric": dg.MetadataValue.text(rule.metric),
        "direction": dg.MetadataValue.text(rule.direction),
        "candidates": dg.MetadataValue.int(result.candidates),
        "champion_checkpoint_id": dg.MetadataValue.text(champ.checkpoint_id if champ else ""),
        "previous_champion_id": dg.MetadataValue.text(previous_id),
        "changed": dg.MetadataValue.bool(changed),
        "changes": dg.MetadataValue.int(changes),
        "leaderboard": _leaderboard(rank(candidates, rule.direction), rule.metric),
        "candidate_list": dg.MetadataValue.json([c.to_dict() for c in candidates]),
    }
    if champ is not None:
        meta["champion_partition"] = dg.MetadataValue.text(champ.partition)
        meta["model_name"] = dg.MetadataValue.text(champ.model_name or "")
        meta["score"] = dg.MetadataValue.float(champ.value)
        if champ.step is not None:
            meta["step"] = dg.MetadataValue.int(champ.step)
    if runner is not None and result.margin is not None:
        meta["margin"] = dg.MetadataValue.float(round(result.margin, 9))
        meta["runner_up_checkpoint_id"] = dg.MetadataValue.text(runner.checkpoint_id)
        meta["runner_up_score"] = dg.MetadataValue.float(runner.value)
    return meta


def fold_sweep(
    sweep: str,
    state: SweepState,
    landed: list[tuple[str, Candidate | None]],
    rule: ChampionRule,
    key: dg.AssetKey,
) -> list[dg.AssetMaterialization]:
    """Fold each evaluation in landing order: one materialization per change of champion
    (so the history does not depend on how many evaluations a tick sees), plus one with the
    final standings when evaluations after the last change moved them."""
    events = []
    pending = False
    for partition, cand in landed:
        state.candidates = fold(state.candidates, {partition: cand})
        result = standing(state.candidates, rule.direction, rule.min_candidates)
        champ = result.champion
        if champ is not None and champ.checkpoint_id != state.champion_id:
            state.before_id, state.champion_id = state.champion_id, champ.checkpoint_id
            state.changes += 1
            events.append(_materialization(sweep, state, result, rule, key, changed=True))
            pending = False
        else:
            pending = True
            if champ is None and state.champion_id:  # re-evaluations left too few candidates
                state.before_id, state.champion_id = state.champion_id, ""
    if pending:
        result = standing(state.candidates, rule.direction, rule.min_candidates)
        events.append(_materialization(sweep, state, result, rule, key, changed=False))
    return events


def _materialization(
    sweep: str,
    state: SweepState,
    result: Standing,
    rule: ChampionRule,
    key: dg.AssetKey,
    *,
    changed: bool,
) -> dg.AssetMaterialization:
    champ = result.champion
    what = f"{champ.checkpoint_id} ({rule.metric} {champ.value:g})" if champ else "none yet"
    meta = champion_metadata(
        sweep,
        state.candidates,
        result,
        rule,
        previous_id=state.before_id,
        changes=state.changes,
        changed=changed,
    )
    return dg.AssetMaterialization(
        asset_key=key,
        partition=sweep,
        metadata=meta,
        description=f"champion of {sweep}: {what}" + (" (changed)" if changed else ""),
    )


# --- the sensor -----------------------------------------------------------------------


def champion_changed_request(
    sweep: str, champ: Candidate, previous_id: str, changes: int, *, partitioned: bool
) -> dg.RunRequest:
    tags = {
        "together/event": CHAMPION_CHANGED,
        "together/sweep": tag_value(sweep),
        "together/checkpoint_id": champ.checkpoint_id,
        "together/score": repr(champ.value),
        "together/change": str(changes),
    }
    if champ.model_name:
        tags["together/model_name"] = tag_value(champ.model_name)
    if champ.session_id:
        tags["together/session_id"] = champ.session_id
    if champ.step is not None:
        tags["together/step"] = str(champ.step)
    if previous_id:
        tags["together/previous_checkpoint_id"] = previous_id
    return dg.RunRequest(
        run_key=f"{CHAMPION_CHANGED}:{sweep}:{champ.checkpoint_id}:{changes}",
        tags=tags,
        partition_key=champ.partition if partitioned else None,
    )


def _read_cursor(cursor: str | None) -> int | None:
    try:
        after = json.loads(cursor)["after"] if cursor else None
    except (ValueError, KeyError, TypeError):
        return None
    return after if isinstance(after, int) else None


def _champion_job(
    name: str, job: "Job | None", assets: "Assets | None", options: ChampionOptions
) -> "Job | None":
    """The job of ``champion_changed`` runs: ``job``, or ``assets`` run as the asset job
    ``options.job_name``, or none."""
    if job is not None and assets is not None:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' takes at most one of job= and assets="
        )
    if assets is not None:
        return dg.define_asset_job(options.job_name, selection=assets)
    return job


def _champion_sensor(
    *,
    name: str,
    job: "Job | None",
    rule: ChampionRule,
    options: ChampionOptions,
    minimum_interval_seconds: int,
    default_status: dg.DefaultSensorStatus,
    description: str | None,
) -> dg.SensorDefinition:
    """The sensor that keeps the champion asset (``options.key``, partitioned by
    ``SWEEP_PARTITIONS``) up to date from the materializations of ``options.evaluation_key``,
    and runs ``job`` once per champion change (with ``options.partitioned_job`` the run
    carries the champion's checkpoint partition key)."""
    key, evaluation_key = options.key, options.evaluation_key
    checkpoint_asset_key = options.checkpoint_asset_key
    partitioned_job = options.partitioned_job

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        instance = context.instance
        after = _read_cursor(context.cursor)
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=evaluation_key, after_storage_id=after),
            limit=_BATCH,
            ascending=True,
        ).records
        if not records:
            return dg.SkipReason(f"no new {evaluation_key.to_user_string()} materialization")
        landed: list[tuple[str, Candidate | None]] = []  # oldest first
        for record in records:
            mat = record.asset_materialization
            if mat is not None and mat.partition:
                cand = candidate(mat.partition, dict(mat.metadata), rule.metric)
                landed.append((mat.partition, cand))
        sweeps_of = checkpoint_sweeps(
            instance, sorted({p for p, _ in landed}), checkpoint_asset_key=checkpoint_asset_key,
            separator=rule.name_separator,
        )  # fmt: skip
        by_sweep: dict[str, list[tuple[str, Candidate | None]]] = {}
        for partition, cand in landed:
            by_sweep.setdefault(sweeps_of[partition], []).append((partition, cand))
        previous = latest_metadata(instance, key, sorted(by_sweep))
        events: list[dg.AssetMaterialization] = []
        requests, new_sweeps = [], []
        for sweep in sorted(by_sweep):
            if sweep not in previous and not instance.has_dynamic_partition(
                SWEEP_PARTITIONS.name or "", sweep
            ):
                new_sweeps.append(sweep)
            state = SweepState.read(previous.get(sweep))
            events += fold_sweep(sweep, state, by_sweep[sweep], rule, key)
            if state.champion_id != state.announced_id and state.champion_id:
                champ = next(c for c in state.candidates if c.checkpoint_id == state.champion_id)
                context.log.info(
                    f"sweep {sweep}: champion {champ.checkpoint_id} ({rule.metric} "
                    f"{champ.value:g}), was {state.announced_id or '-'}"
                )
                if job is not None:
                    requests.append(
                        champion_changed_request(
                            sweep, champ, state.announced_id, state.changes,
                            partitioned=partitioned_job,
                        )
                    )  # fmt: skip
        context.log.info(
            f"{len(records)} evaluation(s) folded into {len(by_sweep)} sweep(s); "
            f"{len(requests)} champion_changed run(s)"
        )
        return dg.SensorResult(
            run_requests=requests,
            asset_events=events,
            dynamic_partitions_requests=(
                [SWEEP_PARTITIONS.build_add_request(new_sweeps)] if new_sweeps else None
            ),
            cursor=json.dumps({"after": records[-1].storage_id}),
        )

    return dg.SensorDefinition(
        evaluation_fn=evaluate,
        name=name,
        jobs=[job] if job is not None else [],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description
        or f"Folds each {evaluation_key.to_user_string()} materialization into its "
        f"sweep's champion ({key.to_user_string()})"
        + (f"; runs {job.name} when the champion changes." if job is not None else "."),
    )


def _champion_asset_spec(
    key: dg.AssetKey, *, evaluation_key: dg.AssetKey, group_name: str | None
) -> dg.AssetSpec:
    """The champion asset: recorded by the champion sensor, one partition per sweep."""
    return dg.AssetSpec(
        key,
        partitions_def=SWEEP_PARTITIONS,
        deps=[evaluation_key],
        group_name=group_name,
        kinds={"together"},
        description="The best evaluated checkpoint of each sweep (W&B group, else display-name "
        "prefix): checkpoint, registered model name, score and margin over the runner-up. "
        "Recorded by the champion sensor as each evaluation lands.",
    )


def build_champion_definitions(
    *,
    name: str = "together_rl_champion",
    job: "Job | None" = None,
    assets: "Assets | None" = None,
    rule: ChampionRule | None = None,
    options: ChampionOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.Definitions:
    """The champion asset (``options.key``, in ``options.group_name``) and the sensor that
    keeps it: it folds each materialization of ``options.evaluation_key`` into its sweep's
    standings and runs ``job`` (or ``assets``, as the asset job ``options.job_name``) once per
    change of champion; with neither, it only records the champions.

    Args:
        name: the sensor's name (also the key of its cursor).
        rule: how checkpoints are compared (:class:`~rl_sessions_dagster.ChampionRule`).
        options: the assets read and written and the shape of the run (:class:`ChampionOptions`).
        minimum_interval_seconds, default_status, description: as for ``@dg.sensor``.
    """
    options = options or ChampionOptions()
    sensor = _champion_sensor(
        name=name, job=_champion_job(name, job, assets, options), rule=rule or ChampionRule(),
        options=options, minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status, description=description,
    )  # fmt: skip
    spec = _champion_asset_spec(
        options.key, evaluation_key=options.evaluation_key, group_name=options.group_name
    )
    return dg.Definitions(assets=[spec], sensors=[sensor])
