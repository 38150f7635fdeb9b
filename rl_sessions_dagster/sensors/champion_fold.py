"""How the champion sensor folds evaluations into a sweep's standing, and what the sweep's
partition of the champion asset records (champion, model, score, margin, leaderboard)."""

from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..core.sweeps import Candidate, ChampionRule, Standing, fold, rank, standing
from ..partitions import metadata_value

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
