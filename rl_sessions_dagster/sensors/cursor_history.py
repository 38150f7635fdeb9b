"""Recovering a sensor whose stored cursor is unreadable, from the sensor's own tick history.

Dagster copies the cursor a tick produced into that tick's row. When the current cursor is
corrupt, truncated, or from a format this release cannot read, starting over would silently
drop every event that happened since the last good tick. Instead the newest readable cursor
in the tick history is restored: events since then are announced again, and Dagster skips a
run_key that already has a run, so nothing is duplicated either.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import dagster as dg

# Private on purpose, the one runtime import of dagster._ in the library's glue: Dagster has no
# public API for a sensor's stored ticks, and the instance's instigator states are filtered by
# this enum. Without it, an unreadable cursor could only start over.
from dagster._core.scheduler.instigation import InstigatorType

from ..core.state import CursorError

T = TypeVar("T")

#: how many past ticks are searched for a readable cursor.
HISTORY_DEPTH = 500


def stored_ticks(context: dg.SensorEvaluationContext, limit: int = HISTORY_DEPTH) -> list:
    """The sensor's stored ticks, newest first ([] when no instance or no history).

    The sensor is found by name (and code location, when the context knows it); when several
    match, the one whose stored cursor is the one being evaluated is preferred.
    """
    try:
        instance = context.instance
    except Exception:  # built without an instance (a plain unit test)
        return []
    states = [
        s
        for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        if s.instigator_name == context.sensor_name
        and (
            context.repository_name is None
            or s.origin.repository_origin.repository_name == context.repository_name
        )
    ]
    if not states:
        return []
    states.sort(key=lambda s: getattr(s.instigator_data, "cursor", None) != context.cursor)
    state = states[0]
    return list(instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=limit))


def restore_from_history(
    context: dg.SensorEvaluationContext, parse: Callable[[str | None], T]
) -> tuple[T, int] | None:
    """The newest readable cursor of a past tick, parsed, with that tick's timestamp."""
    for tick in stored_ticks(context):
        cursor = tick.cursor
        if not cursor or cursor == context.cursor:
            continue
        try:
            return parse(cursor), int(tick.timestamp)
        except CursorError:
            continue
    return None


def read_state(
    context: dg.SensorEvaluationContext,
    parse: Callable[[str | None], T],
    fresh: Callable[[], T],
) -> T:
    """A sensor's state from its cursor; an unreadable cursor is recovered from the tick
    history (events since that tick are announced again, deduplicated by run_key), and only
    when no readable cursor exists does the sensor start over, saying so."""
    try:
        return parse(context.cursor)
    except CursorError as exc:
        problem = str(exc)
    restored = restore_from_history(context, parse)
    if restored is not None:
        state, at = restored
        context.log.warning(
            f"{problem}; restored the cursor of the tick at {_iso(at)} from this sensor's "
            "tick history: events since then are announced again, and Dagster skips any "
            "run_key that already has a run"
        )
        return state
    context.log.warning(
        f"{problem}; no readable cursor in this sensor's tick history: starting over from "
        "the current state of the API (what happened before now is not announced)"
    )
    return fresh()


def _iso(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, tz=UTC).isoformat(timespec="seconds")


def previous_tick_failed_loudly(context: dg.SensorEvaluationContext, marker: str) -> bool:
    """Whether this sensor's newest stored tick is a failure whose message has ``marker``."""
    ticks = stored_ticks(context, limit=1)
    if not ticks:
        return False
    error = ticks[0].error
    return error is not None and marker in (error.message or "")
