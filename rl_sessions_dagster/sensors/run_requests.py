"""Turning a ``SessionEvent`` into what Dagster consumes: a RunRequest, tags, a partition key
and a runless materialization of the checkpoint asset."""

from collections.abc import Callable

import dagster as dg

from ..core.events import SessionEvent
from ..partitions.checkpoints import checkpoint_metadata, checkpoint_partition_key

#: A hook that reshapes the default RunRequest (run config, extra tags) or drops the event
#: by returning None.
RunRequestFn = Callable[[SessionEvent, dg.RunRequest], dg.RunRequest | None]

TAG_PREFIX = "together/"
_MAX_TAG_VALUE = 200


def tag_value(value: object) -> str:
    """``value`` as a run tag value, cut to Dagster's length limit."""
    text = str(value)
    return text if len(text) <= _MAX_TAG_VALUE else text[: _MAX_TAG_VALUE - 1] + "…"


def event_tags(event: SessionEvent) -> dict[str, str]:
    """``together/*`` tags: event kind, session, checkpoint and step, base model, name."""
    session = event.session
    tags = {
        f"{TAG_PREFIX}event": event.kind.value,
        f"{TAG_PREFIX}session_id": session.id,
        f"{TAG_PREFIX}session_status": session.status.short
        if session.status.name != "UNKNOWN"
        else tag_value(session.raw_status),
    }
    if event.checkpoint is not None:
        tags[f"{TAG_PREFIX}checkpoint_id"] = event.checkpoint.id
        if event.checkpoint.step is not None:
            tags[f"{TAG_PREFIX}step"] = str(event.checkpoint.step)
    elif session.step is not None:
        tags[f"{TAG_PREFIX}step"] = str(session.step)
    if session.base_model:
        tags[f"{TAG_PREFIX}base_model"] = tag_value(session.base_model)
    if session.display_name:
        tags[f"{TAG_PREFIX}display_name"] = tag_value(session.display_name)
    if event.previous_status:
        tags[f"{TAG_PREFIX}previous_status"] = tag_value(event.previous_status)
    return tags


def default_run_request(event: SessionEvent, *, partitioned: bool) -> dg.RunRequest:
    """``run_key`` is the event's key: unique per fact, so Dagster dedupes a replayed tick.

    It does not contain the partition key, so it stayed the same when partition keys became
    readable (0.2): a checkpoint announced by 0.1.0 is never run again under a new key.
    """
    partition_key = None
    if partitioned and event.checkpoint is not None:
        partition_key = checkpoint_partition_key(event.session, event.checkpoint)
    return dg.RunRequest(run_key=event.key, tags=event_tags(event), partition_key=partition_key)


def checkpoint_materialization(
    event: SessionEvent, asset_key: dg.AssetKey
) -> dg.AssetMaterialization | None:
    if event.checkpoint is None:
        return None
    return dg.AssetMaterialization(
        asset_key=asset_key,
        partition=checkpoint_partition_key(event.session, event.checkpoint),
        description=f"{event.kind.value} in session {event.session_id}",
        metadata={
            **checkpoint_metadata(event.session, event.checkpoint),
            "event": dg.MetadataValue.text(event.kind.value),
        },
    )
