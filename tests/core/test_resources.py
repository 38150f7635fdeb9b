"""Unit cases of the model-resource tracker: cursor reading, and the facts the property test
covers statistically, spelled out."""

from datetime import UTC, datetime

import pytest

from rl_sessions_dagster.api.models import ModelResource
from rl_sessions_dagster.core import TrackerState
from rl_sessions_dagster.core.resources import (
    ResourceObservation,
    ResourceTrackerConfig,
    ResourceTrackerState,
    advance_resources,
)
from rl_sessions_dagster.core.state import CursorError

T0 = 1_800_000_000_000


def res(rid, status, *, created=0, **extra):
    doc = {"id": rid, "status": status,
           "created_at": datetime.fromtimestamp((T0 + created * 1000) / 1000, UTC).isoformat(),
           **extra}  # fmt: skip
    return ModelResource.model_validate(doc)


@pytest.mark.parametrize(
    "cursor",
    ["{", "[]", '{"v": 1}', '{"kind": "model_resources", "v": 99}',
     '{"kind": "model_resources", "v": 1, "b": 0, "m": 0, "t": {"r": [1]}, "r": {}}'],
)  # fmt: skip
def test_unreadable_cursors_raise_cursor_error(cursor):
    with pytest.raises(CursorError):
        ResourceTrackerState.from_cursor(cursor)


def test_a_session_cursor_is_not_a_resource_cursor():
    with pytest.raises(CursorError):
        ResourceTrackerState.from_cursor(TrackerState(initialized=True).to_cursor())


def test_missing_and_null_fields_never_raise():
    state = advance_resources(
        ResourceTrackerState(), ResourceObservation(T0), ResourceTrackerConfig()
    )
    odd = [
        ModelResource.model_validate({"id": "a", "status": None}),
        ModelResource.model_validate(
            {"id": "b", "status": "MODEL_RESOURCES_STATUS_READY", "expires_at": ""}
        ),
        res("c", "MODEL_RESOURCES_STATUS_ERROR", created=5, error={"code": None}),
    ]
    out = advance_resources(
        state.state, ResourceObservation(T0 + 10_000, odd), ResourceTrackerConfig()
    )
    assert sorted(e.key for e in out.events) == ["resource_error:c", "resource_ready:b"]
    again = advance_resources(
        out.state, ResourceObservation(T0 + 20_000, odd), ResourceTrackerConfig()
    )
    assert again.events == []


def test_kinds_filter_still_tracks_everything():
    cfg = ResourceTrackerConfig(kinds=frozenset({"resource_stopped"}))  # type: ignore[arg-type]
    s0 = advance_resources(ResourceTrackerState(), ResourceObservation(T0), cfg).state
    s1 = advance_resources(s0, ResourceObservation(T0 + 1, [res("r", "READY", created=1)]), cfg)
    assert s1.events == [] and "r" in s1.state.tracked
    s2 = advance_resources(
        s1.state, ResourceObservation(T0 + 2, [res("r", "STOPPED", created=1)]), cfg
    )
    assert [e.key for e in s2.events] == ["resource_stopped:r"]
