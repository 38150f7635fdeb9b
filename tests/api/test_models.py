"""Behaviour of the drift-tolerant models beyond the corpus: edge values and properties."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.api import Checkpoint, Page, SessionStatus, TrainingSession
from rl_sessions_dagster.api.enums import TERMINAL_SESSION_STATUSES
from rl_sessions_dagster.api.models import Registration
from rl_sessions_dagster.api.operations import Operation


def test_status_parses_short_full_unknown_and_missing() -> None:
    assert SessionStatus.parse("RUNNING") is SessionStatus.RUNNING
    assert SessionStatus.parse("training_session_status_stopped") is SessionStatus.STOPPED
    assert SessionStatus.parse(SessionStatus.ERROR) is SessionStatus.ERROR
    assert SessionStatus.parse("TRAINING_SESSION_STATUS_PAUSED") is SessionStatus.UNKNOWN
    assert SessionStatus.parse(None) is SessionStatus.UNKNOWN
    assert SessionStatus.EXPIRED.short == "EXPIRED"
    assert SessionStatus.STOPPING not in TERMINAL_SESSION_STATUSES


def test_null_status_and_type_read_as_unknown() -> None:
    # A null enum used to fail validation and with it the whole page.
    session = TrainingSession.model_validate_json('{"id": "s", "status": null}')
    assert session.raw_status == "" and session.status is SessionStatus.UNKNOWN
    assert Checkpoint.model_validate_json('{"id": "c", "type": null}').raw_type == ""
    assert not Operation.model_validate_json('{"id": "o", "status": null}').is_done


def test_blank_timestamps_are_none() -> None:
    raw = {"id": "s", "created_at": "", "error": {"message": "m", "occurred_at": ""}}
    session = TrainingSession.model_validate(raw)
    assert session.created_at is None and session.error and session.error.occurred_at is None


def test_registry_artifact_without_id_does_not_break_the_session() -> None:
    raw = {"id": "s", "training_checkpoints": [{"id": "t", "registration": {"revision_id": "r"}}]}
    reg = TrainingSession.model_validate(raw).training_checkpoints[0].registration
    assert reg is not None and reg.id is None


def test_page_cursor_is_none_on_the_last_page() -> None:
    assert (
        Page[TrainingSession]
        .model_validate({"meta": {"has_more": False, "next_cursor": "x"}})
        .next_cursor
        is None
    )
    assert Page[TrainingSession].model_validate({"meta": {"next_cursor": "x"}}).next_cursor == "x"
    assert Page[TrainingSession].model_validate({"meta": {"has_more": True}}).next_cursor is None


ids = st.one_of(st.none(), st.text(min_size=1, max_size=8))


@given(
    model=ids,
    adapter=ids,
    legacy=ids,
    shape=st.sampled_from(["current", "object_ids", "legacy"]),
)
def test_registration_prefers_adapter_then_model_then_legacy_name(
    model: str | None, adapter: str | None, legacy: str | None, shape: str
) -> None:
    raw: dict[str, Any]
    if shape == "current":
        raw = {"model": {"id": model} if model else None, "adapter": {"id": adapter}}
        legacy = None
    elif shape == "object_ids":
        raw = {"model_object_id": model, "adapter_object_id": adapter, "model_name": legacy}
    else:
        raw = {"model_name": legacy, "registered_at": "2026-01-02T00:00:00Z"}
        model = adapter = None
    reg = Registration.model_validate(raw)
    assert reg.deployable_model == (adapter or model or legacy)
    assert reg.is_registered == bool(adapter or model or legacy)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
known = set(TrainingSession.model_fields) | {"status"}


@given(
    extra=st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: k not in known), json_values, max_size=5
    )
)
def test_unknown_fields_never_break_parsing_and_are_kept(extra: dict[str, Any]) -> None:
    body = json.dumps({"id": "s", "status": "TRAINING_SESSION_STATUS_RUNNING", **extra})
    session = TrainingSession.model_validate_json(body)
    assert session.status is SessionStatus.RUNNING
    assert session.model_extra == extra
