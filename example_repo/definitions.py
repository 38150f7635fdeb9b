"""The example project in Python: sensors, a per-checkpoint evaluation with a score check, a
report job for finished sessions, the scheduled sync table, and the GPUs (resource events,
the idle guard, spend). The same project configured
with the YAML Component is ``example_repo/component_defs.py`` (the demo runs that one, with
the built-in report and champion); its evaluation asset is defined here.

Environment: ``TOGETHER_API_KEY`` (required), ``TOGETHER_BASE_URL`` (optional; the demo points
it at the local simulator), ``RL_SENSOR_INTERVAL_SECONDS`` (default 30),
``RL_IDLE_SECONDS`` (default 1800). Loading these definitions makes no API call.
"""

import os

import dagster as dg

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    EventKind,
    EventRoute,
    IdlePolicy,
    ResourceRoute,
    ResourceSensorOptions,
    TogetherRLResource,
    build_idle_guard,
    build_model_resource_sensor,
    build_session_sensor,
    build_spend_asset,
    checkpoint_id_for_partition,
)
from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.core.events import TERMINAL_EVENTS

from .evaluation import evaluate_model
from .gpus import GPU_NOTICES_KEY, gpu_notices

SENSOR_INTERVAL = int(os.getenv("RL_SENSOR_INTERVAL_SECONDS", "30"))
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])
SCORE_CHECK = "score_not_dropping"


@dg.asset(
    key=EVAL_KEY,
    partitions_def=CHECKPOINT_PARTITIONS,
    deps=[CHECKPOINT_ASSET_SPEC],
    kinds={"together", "python"},
    group_name="together_rl",
    check_specs=[
        dg.AssetCheckSpec(
            SCORE_CHECK,
            asset=EVAL_KEY,
            description="Warns when a checkpoint scores lower than the previous checkpoint "
            "of the same session.",
        )
    ],
    description="Arithmetic accuracy of each registered checkpoint, via chat completions.",
    # Each chat call is retried by the resource's retry policy (below); this retries the whole
    # step for what is left (e.g. the API down for a minute). A run that still fails is retried
    # as a new run when the instance has run_retries on (deploy/dagster.yaml).
    retry_policy=dg.RetryPolicy(max_retries=2, delay=10, backoff=dg.Backoff.EXPONENTIAL),
)
def checkpoint_evaluation(
    context: dg.AssetExecutionContext, together: TogetherRLResource
) -> dg.MaterializeResult:
    checkpoint_id = checkpoint_id_for_partition(context)
    with together.get_client() as client:
        checkpoint = client.get_checkpoint(checkpoint_id)
        base_url = client.base_url
    registration = checkpoint.inference_registration
    if registration is None or not registration.deployable_model:
        raise dg.Failure(
            f"checkpoint {checkpoint_id} has no registered model to evaluate", allow_retries=False
        )
    result = evaluate_model(
        base_url,
        together.api_key or os.environ.get("TOGETHER_API_KEY", ""),
        registration.deployable_model,
        seed=checkpoint.session_id or "rl-eval",
        retry=together.retry_policy(),
    )
    previous = _previous_score(context, checkpoint.session_id, checkpoint.step)
    dropped = previous is not None and result.score < previous[1]
    check = dg.AssetCheckResult(
        check_name=SCORE_CHECK,
        passed=not dropped,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "score": result.score,
            "previous_score": previous[1] if previous else -1.0,
            "previous_step": previous[0] if previous else -1,
        },
    )
    context.log.info(f"checkpoint {checkpoint_id} step {checkpoint.step}: score {result.score:.2f}")
    return dg.MaterializeResult(
        metadata={
            "score": dg.MetadataValue.float(result.score),
            "correct": dg.MetadataValue.int(result.correct),
            "questions": dg.MetadataValue.int(result.total),
            "step": dg.MetadataValue.int(checkpoint.step or 0),
            "session_id": dg.MetadataValue.text(checkpoint.session_id or ""),
            "checkpoint_id": dg.MetadataValue.text(checkpoint_id),
            "model": dg.MetadataValue.text(result.model),
            # One plot per session under the asset's Overview: "score <session name>".
            **(
                {
                    f"score {context.partition_key.split('/')[0]}": dg.MetadataValue.float(
                        result.score
                    )
                }
                if "/" in context.partition_key
                else {}
            ),
        },
        check_results=[check],
    )


def _previous_score(
    context: dg.AssetExecutionContext, session_id: str | None, step: int | None
) -> tuple[int, float] | None:
    """The score of the latest earlier checkpoint of the same session, from the event log."""
    records = context.instance.fetch_materializations(EVAL_KEY, limit=500).records
    best: tuple[int, float] | None = None
    for record in records:
        mat = record.asset_materialization
        if mat is None:
            continue
        meta = mat.metadata
        if meta.get("session_id") != dg.MetadataValue.text(session_id or ""):
            continue
        prev_step = meta["step"].value if "step" in meta else None
        score = meta["score"].value if "score" in meta else None
        if not isinstance(prev_step, int) or not isinstance(score, float):
            continue
        if step is not None and prev_step < step and (best is None or prev_step > best[0]):
            best = (prev_step, score)
    return best


REPORTS_KEY = dg.AssetKey(["together", "session_reports"])


def _report(context: dg.OpExecutionContext, together: TogetherRLResource) -> tuple[dict, dict]:
    """Final step, checkpoints and (for ERROR) error code and message of a finished session."""
    session_id = context.run.tags["together/session_id"]
    with together.get_client() as client:
        session = client.get_session(session_id)
    error = session.error
    report = {
        "session_id": session.id,
        "display_name": session.display_name,
        "status": session.status.short,
        "final_step": session.step,
        "inference_checkpoints": len(session.inference_checkpoints),
        "registered_checkpoints": sum(c.is_registered for c in session.inference_checkpoints),
        "error_code": error.code_raw if error else None,
        "error_message": error.message if error else None,
        "wandb_url": session.wandb_url,
    }
    lines = [f"| {k} | {v} |" for k, v in report.items()]
    metadata = {
        "report": dg.MetadataValue.md("| field | value |\n|---|---|\n" + "\n".join(lines)),
        "session_id": dg.MetadataValue.text(session.id),
        "status": dg.MetadataValue.text(session.status.short),
    }
    level = context.log.warning if error else context.log.info
    level(
        f"session {session.id} finished {session.status.short} at step {session.step}"
        + (f": {error.code_raw} {error.message}" if error else "")
    )
    return report, metadata


@dg.op(tags={"kind": "together"})
def session_report(context: dg.OpExecutionContext, together: TogetherRLResource) -> dict:
    """The report as an op (the Python example's status sensor runs this job)."""
    report, metadata = _report(context, together)
    context.log_event(
        dg.AssetMaterialization(
            asset_key=REPORTS_KEY,
            description=f"Report for session {report['session_id']}",
            metadata=metadata,
        )
    )
    return report


@dg.job(tags={"together/job": "finished_session_report"})
def finished_session_report() -> None:
    session_report()


evaluation_job = dg.define_asset_job("evaluate_checkpoint", selection=[EVAL_KEY])

checkpoint_sensor = build_session_sensor(
    name="evaluate_new_checkpoints",
    routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
    minimum_interval_seconds=SENSOR_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
status_sensor = build_session_sensor(
    name="report_finished_sessions",
    routes=[EventRoute(TERMINAL_EVENTS, job=finished_session_report)],
    minimum_interval_seconds=SENSOR_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
)

# No db_path: the tables go where the resource says (RL_TABLES_URL, else the instance's
# PostgreSQL, else $DAGSTER_HOME/together_rl_sync.sqlite), with the spend tables.
sync_asset = build_session_sync_asset()
sync_job = dg.define_asset_job("together__rl_sessions_table_sync_job", selection=[sync_asset])
sync_schedule = dg.ScheduleDefinition(
    job=sync_job, cron_schedule="*/15 * * * *", default_status=dg.DefaultScheduleStatus.RUNNING
)

# The GPUs, as in defs.yaml: each model-resource event runs gpu_notices and refreshes spend;
# the idle guard stops this key's READY resources left with no session.
spend_asset = build_spend_asset()
gpu_notice_job = dg.define_asset_job("gpu_notice", selection=[GPU_NOTICES_KEY, spend_asset.key])
gpu_sensor = build_model_resource_sensor(
    name="together_rl_gpu_events",
    routes=[
        ResourceRoute(
            ["resource_ready", "resource_error", "resource_stopped", "resource_expiring"],
            job=gpu_notice_job,
        )
    ],
    options=ResourceSensorOptions(expiring_lead_seconds=300),
    minimum_interval_seconds=SENSOR_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
guard_job, guard_sensor = build_idle_guard(
    policy=IdlePolicy(idle_seconds=float(os.getenv("RL_IDLE_SECONDS", "1800"))),
    dry_run=False,
    minimum_interval_seconds=SENSOR_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
)

defs = dg.Definitions(
    assets=[CHECKPOINT_ASSET_SPEC, checkpoint_evaluation, sync_asset, gpu_notices, spend_asset],
    jobs=[evaluation_job, finished_session_report, sync_job, gpu_notice_job, guard_job],
    sensors=[checkpoint_sensor, status_sensor, gpu_sensor, guard_sensor],
    schedules=[sync_schedule],
    resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
)
