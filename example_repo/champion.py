"""Where the example sends ``champion_changed``: one run per tick that ends with a new
champion of a sweep (two changes within one tick give one run, for the latest).

The Component's ``champion:`` section routes the event here (``on_change``); the run's
``together/*`` tags name the sweep, the new champion checkpoint, its registered model and
score. A real team would point an endpoint at the model here; the example records the
deployment it would make as the asset's metadata (no API call).
"""

import dagster as dg

CHAMPION_DEPLOY_KEY = dg.AssetKey(["together", "champion_deploy"])


@dg.asset(
    key=CHAMPION_DEPLOY_KEY,
    kinds={"together", "python"},
    group_name="together_rl",
    description="The model each sweep would serve: its champion's registered model, "
    "updated once per tick that ends with a new champion.",
)
def champion_deploy(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    tags = context.run.tags
    sweep, model = tags["together/sweep"], tags.get("together/model_name", "")
    context.log.info(
        f"sweep {sweep}: would deploy {model or tags['together/checkpoint_id']} "
        f"(score {tags['together/score']}, was "
        f"{tags.get('together/previous_checkpoint_id', 'none')})"
    )
    return dg.MaterializeResult(
        metadata={
            "sweep": dg.MetadataValue.text(sweep),
            "checkpoint_id": dg.MetadataValue.text(tags["together/checkpoint_id"]),
            "model_name": dg.MetadataValue.text(model),
            "score": dg.MetadataValue.float(float(tags["together/score"])),
        }
    )
