"""``build_session_report_asset``: one report per finished session, with each checkpoint's latest
score and the spend. A missing score or spend is said in the report, never a failure."""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
from pydantic import Field

from ..api.models import TrainingSession
from ..partitions import (
    EVALUATION_ASSET_KEY,
    checkpoint_partition_key,
    latest_metadata,
    metadata_table,
    metadata_value,
    score_line,
)
from ..resource import TogetherRLResource
from ..resource.tables import expand_target, open_table_store
from ..storage.urls import TableStoreConfigError, TableStoreError

REPORT_ASSET_KEY = dg.AssetKey(["together", "session_report"])
SESSION_TAG = "together/session_id"


class ReportConfig(dg.Config):
    session_id: str = Field(
        default="", description="Report this session (default: the run's together/session_id)."
    )


@dataclass(frozen=True)
class SessionSpend:
    billed_seconds: float
    cost: float | None
    sweep: str


def session_spend(
    resource: TogetherRLResource,
    instance: dg.DagsterInstance,
    session_id: str,
    db_path: str | None = None,
) -> SessionSpend | None:
    """The session's row of the spend tables (or of ``db_path``), if a spend run wrote one."""
    db_path = expand_target(db_path) if db_path else None
    if db_path and "://" not in db_path and db_path != ":memory:" and not os.path.exists(db_path):
        return None  # never create a file just to find it empty
    with open_table_store(resource, instance, db_path, url_setting="spend_db_path") as store:
        row = store.load_session_spend(session_id)
    return SessionSpend(*row) if row else None


def _checkpoint_rows(
    session: "TrainingSession", scores: dict[str, dict[str, Any]], metric: str
) -> list[dict[str, Any]]:
    rows = []
    for c in sorted(session.inference_checkpoints, key=lambda c: (c.step or 0, c.id)):
        partition = checkpoint_partition_key(session, c)
        value = metadata_value(scores.get(partition, {}), metric)
        rows.append(
            {
                "step": c.step if c.step is not None else -1,
                "checkpoint_id": c.id,
                "partition": partition,
                "registered": c.is_registered,
                "model_name": (c.registration.deployable_model if c.registration else None) or "",
                metric: float(value) if isinstance(value, int | float) else None,
            }
        )
    return rows


def report_markdown(
    session: "TrainingSession", rows: list[dict[str, Any]], metric: str, spend: SessionSpend | None
) -> str:
    """The report a person reads on the materialization."""
    error = session.error
    lines = [
        f"## Session {session.display_name or session.id}",
        "",
        "| | |",
        "|---|---|",
        f"| session id | `{session.id}` |",
        f"| final status | **{session.status.short}** |",
        f"| steps | {session.step if session.step is not None else 'unknown'} |",
        f"| base model | {session.base_model or '-'} |",
    ]
    if error is not None:
        lines += [
            f"| error code | `{error.code_raw or 'none given'}` |",
            f"| error message | {error.message or '-'} |",
        ]
    if spend is None:
        lines.append("| spend | not recorded (no spend asset run has seen this session) |")
    else:
        cost = "unpriced" if spend.cost is None else f"${spend.cost:.4f}"
        lines.append(f"| spend | {cost} for {spend.billed_seconds / 3600:.4f} GPU-hours |")
    lines.append(f"| W&B | {session.wandb_url or 'no W&B run'} |")
    lines += ["", f"### Checkpoints ({len(rows)})", ""]
    if not rows:
        lines.append("No inference checkpoint was saved.")
    else:
        line = score_line((r["step"], r[metric]) for r in rows if r[metric] is not None)
        if line:
            lines += [f"{metric} by step: `{line}`", ""]
        lines += [f"| step | checkpoint | model | {metric} |", "|---:|---|---|---:|"]
        for r in rows:
            shown = "not evaluated" if r[metric] is None else f"{r[metric]:.4f}"
            lines.append(
                f"| {r['step']} | `{r['partition']}` | {r['model_name'] or '-'} | {shown} |"
            )
    return "\n".join(lines)


_CHECKPOINT_COLUMNS = dict(
    step="int", checkpoint_id="string", partition="string", registered="bool", model_name="string"
)


def report_metadata(
    session: "TrainingSession", rows: list[dict[str, Any]], metric: str, spend: SessionSpend | None
) -> dict[str, Any]:
    error = session.error
    evaluated = [r for r in rows if r[metric] is not None]
    meta: dict[str, Any] = {
        "report": dg.MetadataValue.md(report_markdown(session, rows, metric, spend)),
        "session_id": dg.MetadataValue.text(session.id),
        "display_name": dg.MetadataValue.text(session.display_name or ""),
        "status": dg.MetadataValue.text(session.status.short),
        "error_code": dg.MetadataValue.text((error.code_raw if error else None) or ""),
        "error_message": dg.MetadataValue.text((error.message if error else None) or ""),
        "steps": dg.MetadataValue.int(session.step or 0),
        "checkpoint_count": dg.MetadataValue.int(len(rows)),
        "evaluated_checkpoints": dg.MetadataValue.int(len(evaluated)),
        "checkpoints": metadata_table(
            {**_CHECKPOINT_COLUMNS, metric: ("float", "empty: not evaluated")}, rows
        ),
        "spend_recorded": dg.MetadataValue.bool(spend is not None),
    }
    if evaluated:
        line = score_line((r["step"], r[metric]) for r in evaluated)
        meta[f"{metric} by step"] = dg.MetadataValue.text(line)
        best = max(evaluated, key=lambda r: (r[metric], -r["step"]))
        meta[f"best_{metric}"] = dg.MetadataValue.float(best[metric])
        meta["best_checkpoint"] = dg.MetadataValue.text(best["partition"])
    if spend is not None:
        meta["billed_hours"] = dg.MetadataValue.float(round(spend.billed_seconds / 3600, 6))
        if spend.cost is not None:
            meta["cost_usd"] = dg.MetadataValue.float(round(spend.cost, 6))
    if session.wandb_url:
        meta["wandb_url"] = dg.MetadataValue.url(session.wandb_url)
    return meta


def build_session_report_asset(
    *,
    key: dg.AssetKey | str | Sequence[str] = REPORT_ASSET_KEY,
    resource_key: str = "together",
    evaluation_key: dg.AssetKey = EVALUATION_ASSET_KEY,
    metric: str = "score",
    spend_db_path: str | None = None,
    group_name: str | None = "together_rl",
    description: str | None = None,
) -> dg.AssetsDefinition:
    """One finished session per materialization (the run's ``together/session_id`` tag); scores
    are ``evaluation_key``'s ``metric`` metadata, spend from the tables or ``spend_db_path``."""

    @dg.asset(
        key=dg.AssetKey.from_coercible(key),
        deps=[evaluation_key],  # the scores it reports
        group_name=group_name,
        kinds={"together", "python"},
        required_resource_keys={resource_key},
        description=description
        or "One report per finished session (stopped, error, expired): status, error, steps, "
        "checkpoints with their scores, spend and the W&B link. The run's together/session_id "
        "tag names the session.",
    )
    def _session_report(
        context: dg.AssetExecutionContext, config: ReportConfig
    ) -> dg.MaterializeResult:
        session_id = config.session_id or context.run.tags.get(SESSION_TAG, "")
        if not session_id:
            raise dg.Failure(
                f"no session to report: the run has no {SESSION_TAG} tag (the event sensor "
                "sets it) and no session_id in its config",
                allow_retries=False,
            )
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        with resource.get_client() as client:
            session = client.get_session(session_id)
        partitions = [checkpoint_partition_key(session, c) for c in session.inference_checkpoints]
        scores = latest_metadata(context.instance, evaluation_key, partitions)
        rows = _checkpoint_rows(session, scores, metric)
        try:
            spend = session_spend(resource, context.instance, session.id, spend_db_path)
        except (TableStoreConfigError, TableStoreError) as exc:
            context.log.warning(f"spend not read: {exc}")
            spend = None
        error = session.error
        level = context.log.warning if error else context.log.info
        level(
            f"session {session.id} ({session.display_name or '-'}) finished "
            f"{session.status.short} at step {session.step}"
            + (f": {error.code_raw} {error.message}" if error else "")
            + f"; {sum(r[metric] is not None for r in rows)}/{len(rows)} checkpoint(s) evaluated"
            + ("" if spend else "; no spend recorded")
        )
        return dg.MaterializeResult(metadata=report_metadata(session, rows, metric, spend))

    return _session_report
