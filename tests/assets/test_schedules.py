"""Jobs and schedules of the table assets: one asset job each, a schedule STOPPED by default."""

import dagster as dg

from rl_sessions_dagster.assets import build_session_sync_asset, build_spend_asset
from rl_sessions_dagster.assets.schedules import table_job_and_schedule


def test_schedule_evaluates_to_one_run_of_the_sync_job() -> None:
    asset = build_session_sync_asset()
    job, schedule = table_job_and_schedule(asset, run_config={"ops": {}})
    assert schedule.cron_schedule == "*/15 * * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert schedule.job_name == job.name == "together__rl_sessions_table_sync_job"
    with dg.build_schedule_context() as ctx:
        (request,) = schedule.evaluate_tick(ctx).run_requests or []
    assert request.run_config == {"ops": {}}

    _, other = table_job_and_schedule(asset, cron_schedule="0 * * * *", schedule_name="hourly")
    assert (other.name, other.cron_schedule) == ("hourly", "0 * * * *")
    with dg.build_schedule_context() as ctx:
        assert len(other.evaluate_tick(ctx).run_requests or []) == 1


def test_spend_gets_its_own_job_and_schedule() -> None:
    asset = build_spend_asset()
    job, schedule = table_job_and_schedule(
        asset, job_name="spend_job", cron_schedule="0 * * * *", schedule_name="spend_hourly"
    )
    assert (schedule.name, schedule.job_name, job.name) == (
        "spend_hourly",
        "spend_job",
        "spend_job",
    )
    assert schedule.description == "Refresh spend_job from the Together RL API."
    assert job.description == "Refresh together/rl_spend from the Together RL API."
