"""Definitions for test_daemon_resources.py: a model resource of the trigger model becoming
READY starts a training run (which provisions its own resource); the run trains until the test
terminates it through the instance."""

import time

import dagster as dg

from rl_sessions_dagster import TogetherRLResource, build_model_resource_sensor, build_training_op
from rl_sessions_dagster.sensors import ResourceFilter

TRIGGER_MODEL = "Qwen/Qwen3-32B"
TRAIN_MODEL = "Qwen/Qwen3-8B"


def train(context, launched):
    context.log.info(f"training on {launched.session_id}")
    for _ in range(3000):  # at most ~5 minutes; the test terminates the run long before
        time.sleep(0.1)


training_op = build_training_op(train)


@dg.job
def training_job() -> None:
    training_op()


def with_config(event, request):
    config = {"base_model": TRAIN_MODEL, "reuse_ready_resource": False,
              "poll_interval_seconds": 0.2, "display_name": f"on-{event.resource_id[:8]}"}  # fmt: skip
    return request.with_replaced_attrs(
        run_config={"ops": {"together_rl_training": {"config": config}}}
    )


defs = dg.Definitions(
    jobs=[training_job],
    sensors=[
        build_model_resource_sensor(
            job=training_job,
            event_kinds=["resource_ready"],
            resource_filter=ResourceFilter(base_model=TRIGGER_MODEL),
            run_request_fn=with_config,
            minimum_interval_seconds=1,
            default_status=dg.DefaultSensorStatus.RUNNING,
        )
    ],
    resources={
        "together": TogetherRLResource(
            api_key=dg.EnvVar("TOGETHER_API_KEY"), max_attempts=2, backoff_max=0.5
        )
    },
)
