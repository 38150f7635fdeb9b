"""Every job the Component defines runs its steps in the run's own process: a second process
per step only adds start-up time to a run of one step."""

import textwrap

import dagster as dg

from tests.components.support import defs_for

YAML = textwrap.dedent(
    """
    resource: {api_key_env: RL_IN_PROCESS_TEST_KEY}
    sessions: {name: rl_events}
    sync: {enabled: true}
    evaluation:
      items: [{a: 12, b: 30, expected: 42}]
      prompt_template: "What is {a} + {b}?"
      graders: [{type: numeric}]
    report: {job_name: finished_session_report}
    champion:
      on_change: {assets: 'key:"deploy_champion"', job_name: deploy}
    model_resources:
      name: gpu_events
      routes: [{event_kinds: [resource_ready], assets: 'key:"gpu_ready"', job_name: gpu_job}]
    idle_guard: {}
    spend: {}
    """
)


@dg.asset
def deploy_champion() -> None: ...


@dg.asset
def gpu_ready() -> None: ...


def test_every_library_job_uses_the_in_process_executor():
    defs = defs_for(YAML, deploy_champion, gpu_ready)
    dg.Definitions.validate_loadable(defs)
    jobs = {j.name: j for j in defs.resolve_all_job_defs() if not j.name.startswith("__")}
    expected = {"evaluate_checkpoint", "finished_session_report", "deploy", "gpu_job"}
    assert expected <= set(jobs)
    assert len(jobs) >= 7  # and the sync, spend and idle guard jobs
    executors = {name: job.executor_def for name, job in jobs.items()}
    assert executors == {name: dg.in_process_executor for name in jobs}
