"""The GPU notices of the example project: one run per model-resource event.

The Component's ``model_resources`` sensor routes ``resource_ready``, ``resource_error``,
``resource_stopped`` and ``resource_expiring`` here; the run's ``together/*`` tags say which
resource and what happened. A real team would page someone on ``resource_error`` or extend a
resource about to expire; the example records the event as the asset's metadata.
"""

import dagster as dg

from rl_sessions_dagster import TogetherRLResource

GPU_NOTICES_KEY = dg.AssetKey(["together", "gpu_notices"])


@dg.asset(
    key=GPU_NOTICES_KEY,
    kinds={"together", "python"},
    group_name="together_rl",
    description="The latest model-resource event (ready, error, stopped, expiring), "
    "with the resource as the API shows it now.",
)
def gpu_notices(
    context: dg.AssetExecutionContext, together: TogetherRLResource
) -> dg.MaterializeResult:
    tags = context.run.tags
    event, rid = tags["together/event"], tags["together/model_resources_id"]
    with together.get_client() as client:
        resource = client.get_model_resource(rid)
    detail = {
        k.removeprefix("together/"): v
        for k, v in tags.items()
        if k.startswith("together/") and k not in ("together/event",)
    }
    level = (
        context.log.warning
        if event in ("resource_error", "resource_expiring")
        else (context.log.info)
    )
    level(f"model resource {rid} ({resource.base_model}): {event}, now {resource.status.short}")
    return dg.MaterializeResult(
        metadata={
            "event": dg.MetadataValue.text(event),
            "model_resources_id": dg.MetadataValue.text(rid),
            "status_now": dg.MetadataValue.text(resource.status.short),
            "base_model": dg.MetadataValue.text(resource.base_model or ""),
            "detail": dg.MetadataValue.json(detail),
        }
    )
