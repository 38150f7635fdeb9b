"""Each sweep's champion, kept by a sensor folding evaluation materializations in landing order
(no API call). A sensor, not a run per evaluation: serial ticks never race to write one sweep."""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..core.sweeps import Candidate, ChampionRule, Standing, fold, rank, standing
from ..partitions import (
    SWEEP_PARTITIONS,
    Assets,
    Job,
    checkpoint_sweeps,
    latest_metadata,
    metadata_value,
)
from .options import ChampionOptions
from .tick import run_tags

CHAMPION_CHANGED = "champion_changed"
_BATCH = 500  # evaluation materializations one tick folds at most (the rest next tick)
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

    sweep: str
    candidates: list[Candidate]
    champion_id: str = ""  # the champion now
    before_id: str = ""  # the champion before the latest change
    changes: int = 0
    announced_id: str = ""  # the champion when the tick began

    @classmethod
    def read(cls, sweep: str, meta: dict[str, Any] | None) -> "SweepState":
        if not meta:
            return cls(sweep, [])
        raw = metadata_value(meta, "candidate_list") or []
        cands = [c for r in raw if isinstance(r, dict) and (c := Candidate.from_dict(r))]
        champion = str(metadata_value(meta, "champion_checkpoint_id") or "")
        return cls(
            sweep,
            cands,
            champion,
            str(metadata_value(meta, "previous_champion_id") or ""),
            int(metadata_value(meta, "changes") or 0),
            champion,
        )

    def fold(
        self, landed: list[tuple[str, Candidate | None]], rule: ChampionRule, key: dg.AssetKey
    ) -> list[dg.AssetMaterialization]:
        """One materialization per change of champion (however many evaluations a tick sees),
        plus one with the final standings when evaluations after the last change moved them."""
        events = []
        pending = False
        for partition, cand in landed:
            self.candidates = fold(self.candidates, {partition: cand})
            result = standing(self.candidates, rule.direction, rule.min_candidates)
            now = result.champion.checkpoint_id if result.champion else ""
            pending = not now or now == self.champion_id
            if now != self.champion_id:  # to "": re-evaluations left too few candidates
                self.before_id, self.champion_id = self.champion_id, now
                if now:
                    self.changes += 1
                    events.append(self.record(result, rule, key, changed=True))
        if pending:
            result = standing(self.candidates, rule.direction, rule.min_candidates)
            events.append(self.record(result, rule, key, changed=False))
        return events

    def record(
        self, result: Standing, rule: ChampionRule, key: dg.AssetKey, *, changed: bool
    ) -> dg.AssetMaterialization:
        """Champion, score, margin, leaderboard and candidates: one record per sweep to read."""
        champ, runner, sweep = result.champion, result.runner_up, self.sweep
        columns = [("rank", "int"), ("checkpoint", "string"), (rule.metric, "float")]
        columns += [("step", "int"), ("model_name", "string")]
        rows = [
            (i + 1, c.partition, c.value, c.step if c.step is not None else -1, c.model_name or "")
            for i, c in enumerate(rank(self.candidates, rule.direction)[:_LEADERBOARD_ROWS])
        ]
        names = [n for n, _ in columns]
        meta: dict[str, Any] = {
            "sweep": dg.MetadataValue.text(sweep),
            "metric": dg.MetadataValue.text(rule.metric),
            "direction": dg.MetadataValue.text(rule.direction),
            "candidates": dg.MetadataValue.int(result.candidates),
            "champion_checkpoint_id": dg.MetadataValue.text(champ.checkpoint_id if champ else ""),
            "previous_champion_id": dg.MetadataValue.text(self.before_id),
            "changed": dg.MetadataValue.bool(changed),
            "changes": dg.MetadataValue.int(self.changes),
            "leaderboard": dg.MetadataValue.table(
                [dg.TableRecord(dict(zip(names, row, strict=True))) for row in rows],
                schema=dg.TableSchema([dg.TableColumn(n, t) for n, t in columns]),
            ),
            "candidate_list": dg.MetadataValue.json([c.to_dict() for c in self.candidates]),
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
        what = f"{champ.checkpoint_id} ({rule.metric} {champ.value:g})" if champ else "none yet"
        what += " (changed)" if changed else ""
        return dg.AssetMaterialization(key, f"champion of {sweep}: {what}", meta, partition=sweep)


def _on_change_requests(records: Sequence[Any], partitioned: bool) -> list[dg.RunRequest]:
    """One run per sweep whose champion these records changed; the change count in the run key
    makes it exactly once per change, even when the title goes back to an earlier champion."""
    by_sweep: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        mat = record.asset_materialization
        if mat is not None and mat.partition:
            by_sweep.setdefault(mat.partition, []).append(dict(mat.metadata))
    requests = []
    for sweep, metas in sorted(by_sweep.items()):
        first, last = metas[0], metas[-1]
        changed_first = metadata_value(first, "changed")
        before = metadata_value(
            first, "previous_champion_id" if changed_first else "champion_checkpoint_id"
        )
        champ = metadata_value(last, "champion_checkpoint_id")
        if not champ or champ == before:
            continue
        raw = metadata_value(last, "candidate_list") or []
        entry = next(
            (r for r in raw if isinstance(r, dict) and r.get("checkpoint_id") == champ), {}
        )
        changes = metadata_value(last, "changes")
        score = metadata_value(last, "score")
        tags = run_tags(
            event=CHAMPION_CHANGED,
            sweep=sweep,
            checkpoint_id=champ,
            score=repr(score) if isinstance(score, float) else None,
            change=changes,
            model_name=metadata_value(last, "model_name"),
            session_id=entry.get("session_id"),
            step=metadata_value(last, "step"),
            previous_checkpoint_id=before,
        )
        pkey = metadata_value(last, "champion_partition") if partitioned else None
        run_key = f"{CHAMPION_CHANGED}:{sweep}:{champ}:{changes}"
        requests.append(dg.RunRequest(run_key=run_key, tags=tags, partition_key=pkey))
    return requests


def _new_records(context: dg.SensorEvaluationContext, key: dg.AssetKey) -> Sequence[Any]:
    """``key``'s materializations after the cursor's storage id, oldest first."""
    try:
        after = json.loads(context.cursor)["after"] if context.cursor else None
    except (ValueError, KeyError, TypeError):
        after = None
    flt = dg.AssetRecordsFilter(
        asset_key=key, after_storage_id=after if isinstance(after, int) else None
    )
    return context.instance.fetch_materializations(flt, limit=_BATCH, ascending=True).records


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
    """The champion asset (by ``SWEEP_PARTITIONS``) and the sensor ``name`` keeping it. With ``job``
    (or ``assets``), ``<name>_on_change`` runs it once per change: a sensor targets a job or assets,
    not both, and only one targeting the champion shows on its page."""
    options = options or ChampionOptions()
    rule = rule or ChampionRule()
    if job is not None and assets is not None:
        raise dg.DagsterInvalidDefinitionError(
            f"sensor '{name}' takes at most one of job= and assets="
        )
    if assets is not None:
        job = dg.define_asset_job(
            options.job_name, selection=assets, executor_def=dg.in_process_executor
        )
    key, evaluation_key = options.key, options.evaluation_key

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        instance, records = context.instance, _new_records(context, evaluation_key)
        if not records:
            return dg.SkipReason(f"no new {evaluation_key.to_user_string()} materialization")
        landed: list[tuple[str, Candidate | None]] = []  # oldest first
        for record in records:
            mat = record.asset_materialization
            if mat is not None and mat.partition:
                cand = candidate(mat.partition, dict(mat.metadata), rule.metric)
                landed.append((mat.partition, cand))
        if landed and all(c is None for _, c in landed):  # the metric is known only now
            mats = [r.asset_materialization for r in records if r.asset_materialization]
            numeric = (dg.FloatMetadataValue, dg.IntMetadataValue)
            found = {n for m in mats for n, v in m.metadata.items() if isinstance(v, numeric)}
            context.log.warning(
                f"champion metric '{rule.metric}' is recorded by none of these {len(records)} "
                "evaluation(s), so no checkpoint can become champion; their numeric entries: "
                f"{', '.join(sorted(found)) or '-'}"
            )
        sweeps_of = checkpoint_sweeps(
            instance,
            sorted({p for p, _ in landed}),
            checkpoint_asset_key=options.checkpoint_asset_key,
            separator=rule.name_separator,
        )
        by_sweep: dict[str, list[tuple[str, Candidate | None]]] = {}
        for partition, cand in landed:
            by_sweep.setdefault(sweeps_of[partition], []).append((partition, cand))
        previous = latest_metadata(instance, key, sorted(by_sweep))
        events: list[dg.AssetMaterialization] = []
        new_sweeps, changed = [], 0
        for sweep in sorted(by_sweep):
            if sweep not in previous and not instance.has_dynamic_partition(
                SWEEP_PARTITIONS.name or "", sweep
            ):
                new_sweeps.append(sweep)
            state = SweepState.read(sweep, previous.get(sweep))
            events += state.fold(by_sweep[sweep], rule, key)
            if state.champion_id and state.champion_id != state.announced_id:
                changed += 1
                context.log.info(
                    f"sweep {sweep}: champion {state.champion_id}, was {state.announced_id or '-'}"
                )
        context.log.info(
            f"{len(records)} evaluation(s) folded into {len(by_sweep)} sweep(s); "
            f"{changed} new champion(s)"
        )
        return dg.SensorResult(
            asset_events=events,
            dynamic_partitions_requests=(
                [SWEEP_PARTITIONS.build_add_request(new_sweeps)] if new_sweeps else None
            ),
            cursor=json.dumps({"after": records[-1].storage_id}),
        )

    sensors = [
        dg.SensorDefinition(
            evaluation_fn=evaluate,
            name=name,
            # never runs it (its events are runless): targeting lists it on the asset's page
            asset_selection=dg.AssetSelection.assets(key),
            minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status,
            description=description
            or f"Folds each {evaluation_key.to_user_string()} materialization into its "
            f"sweep's champion ({key.to_user_string()}).",
        )
    ]
    if job is not None:

        def on_change(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
            records = _new_records(context, key)
            if not records:
                return dg.SkipReason(f"no new {key.to_user_string()} materialization")
            requests = _on_change_requests(records, options.partitioned_job)
            context.log.info(
                f"{len(records)} champion record(s); {len(requests)} champion_changed run(s)"
            )
            return dg.SensorResult(
                run_requests=requests, cursor=json.dumps({"after": records[-1].storage_id})
            )

        sensors.append(
            dg.SensorDefinition(
                evaluation_fn=on_change,
                name=f"{name}_on_change",
                jobs=[job],
                minimum_interval_seconds=minimum_interval_seconds,
                default_status=default_status,
                description=f"Runs {job.name} once per change of a sweep's champion "
                f"({key.to_user_string()}), for the champion its sensor {name} last recorded.",
            )
        )
    spec = dg.AssetSpec(
        key,
        partitions_def=SWEEP_PARTITIONS,
        deps=[evaluation_key],
        group_name=options.group_name,
        kinds={"together"},
        description="The best evaluated checkpoint of each sweep (W&B group, else display-name "
        "prefix): checkpoint, registered model name, score and margin over the runner-up. "
        f"Recorded by the sensor {name} as each evaluation lands.",
    )
    return dg.Definitions(assets=[spec], sensors=sensors)
