"""The two usual single-target sensors, typed: evaluate each checkpoint; report each finished
session. For both with one poll, use :func:`~.session_sensor.build_routed_sensor`."""

from collections.abc import Iterable
from typing import TYPE_CHECKING

import dagster as dg

from ..core import CHECKPOINT_EVENTS, TERMINAL_EVENTS, EventKind
from ..core.filters import SessionFilter
from ..partitions import CHECKPOINT_PARTITIONS
from .options import PollingOptions
from .options import event_kinds as _event_kinds
from .session_sensor import build_rl_event_sensor, build_routed_sensor, single_route

if TYPE_CHECKING:
    from dagster._core.definitions.asset_selection import CoercibleToAssetSelection
    from dagster._core.definitions.target import ExecutableDefinition


def build_checkpoint_sensor(
    *,
    job: "ExecutableDefinition | None" = None,
    target: "CoercibleToAssetSelection | ExecutableDefinition | None" = None,
    name: str = "together_rl_checkpoint_sensor",
    event_kinds: Iterable[EventKind | str] = (EventKind.CHECKPOINT_REGISTERED,),
    session_filter: SessionFilter | None = None,
    options: PollingOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """One run per newly registered inference checkpoint, partitioned by checkpoint.

    The target must be partitioned by ``CHECKPOINT_PARTITIONS`` (checked at load). Use
    ``event_kinds=[EventKind.CHECKPOINT_CREATED]`` for models that never register (e.g.
    MiniMax-M3, whose checkpoints are downloaded instead). Unpartitioned checkpoint runs:
    :func:`~.session_sensor.build_rl_event_sensor`.
    """
    kinds = _event_kinds(event_kinds)
    if not kinds <= CHECKPOINT_EVENTS:
        raise dg.DagsterInvalidDefinitionError("build_checkpoint_sensor takes checkpoint events")
    return build_routed_sensor(
        name=name,
        routes=[single_route(name, kinds, job, target, CHECKPOINT_PARTITIONS)],
        session_filter=session_filter,
        options=options,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description,
    )


def build_session_status_sensor(
    *,
    job: "ExecutableDefinition | None" = None,
    target: "CoercibleToAssetSelection | ExecutableDefinition | None" = None,
    name: str = "together_rl_session_status_sensor",
    event_kinds: Iterable[EventKind | str] = tuple(TERMINAL_EVENTS),
    session_filter: SessionFilter | None = None,
    options: PollingOptions | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> dg.SensorDefinition:
    """One run per session that reaches STOPPED, ERROR or EXPIRED (or the kinds given)."""
    return build_rl_event_sensor(
        name=name,
        event_kinds=event_kinds,
        job=job,
        target=target,
        session_filter=session_filter,
        options=options,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description,
    )
