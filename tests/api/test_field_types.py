"""The field types for the API's "not set" spellings, as a differential test.

Each tricky input goes through a model built on the old definitions (a private copy below) and
one built on the new ones, from JSON and from Python, and must give the same value (and type) or
the same errors (type, location, message, context). Serialization and JSON schema must not change
either. ``MetadataOrNull`` (still an after validator) is read alongside, so that errors of
several fields are compared together.
"""

from __future__ import annotations

import enum
import json
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

import pydantic
import pytest
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from rl_sessions_dagster.api import TrainingSession
from rl_sessions_dagster.api.models import MetadataOrNull, SessionMetadata
from rl_sessions_dagster.api.pages import RawEnum, Timestamp


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _null_is_blank(value: Any) -> Any:
    return "" if value is None else value


def _metadata_or_empty(value: SessionMetadata | None) -> SessionMetadata:
    return SessionMetadata() if value is None else value


OldTimestamp = Annotated[datetime | None, BeforeValidator(_blank_is_none)]
OldRawEnum = Annotated[str, BeforeValidator(_null_is_blank)]
OldMetadataOrNull = Annotated[SessionMetadata | None, AfterValidator(_metadata_or_empty)]

CONFIG = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class Old(BaseModel):
    model_config = CONFIG

    at: OldTimestamp = None
    status: OldRawEnum = Field(default="", alias="raw")
    metadata: OldMetadataOrNull = Field(default_factory=SessionMetadata)


class New(BaseModel):
    model_config = CONFIG

    at: Timestamp = None
    status: RawEnum = Field(default="", alias="raw")
    metadata: MetadataOrNull = Field(default_factory=SessionMetadata)


class Blank(str):
    """A ``str`` subclass (Python input only)."""


class Color(str, enum.Enum):
    EMPTY = ""
    RED = "RED"


JSON_SCALARS: list[Any] = [
    None, "", " ", "2026-05-01T12:00:00Z", "2026-05-01T12:00:00+02:00", "2026-05-01T12:00:00.123456Z",
    "2026-05-01", "2026-05-01T12:00:00", "not-a-date", "2026-13-01T00:00:00Z", "0", "1700000000",
    "RUNNING", 0, 5, -1, 1700000000, 10**20, 1.5, -0.5, 1e300, True, False, [], [""], {}, {"a": 1},
]  # fmt: skip
PYTHON_ONLY: list[Any] = [
    b"", b"2026-05-01T12:00:00Z", bytearray(b"x"), Blank(""), Blank("2026-05-01T12:00:00Z"),
    Blank("RED"), Color.EMPTY, Color.RED, datetime(2026, 5, 1, tzinfo=UTC),
    datetime(2026, 5, 1), date(2026, 5, 1), timedelta(seconds=1), object(), ("a",),
]  # fmt: skip
METADATA: list[Any] = [
    None, {}, {"wandb": None}, {"wandb": {}}, {"wandb": {"url": "https://w.b/r", "x": 1}},
    {"wandb": {"url": 5}}, {"wandb": {"url": 5, "project": []}}, {"wandb": "x"}, {"other": [1]},
    [], "", 0, True,
]  # fmt: skip


def _outcome(model: type[BaseModel], data: Any, from_json: bool) -> tuple[str, Any]:
    try:
        if from_json:
            obj = model.model_validate_json(json.dumps(data))
        else:
            obj = model.model_validate(data)
    except pydantic.ValidationError as exc:
        return "error", exc.errors(include_url=False)
    values = {name: (type(v), v) for name, v in obj.__dict__.items()}
    return "ok", (values, obj.model_fields_set, obj.model_extra, obj.model_dump_json())


def _same(data: Any, from_json: bool) -> None:
    old, new = _outcome(Old, data, from_json), _outcome(New, data, from_json)
    assert new == old, data


@pytest.mark.parametrize("value", JSON_SCALARS)
@pytest.mark.parametrize("field", ["at", "raw", "metadata"])
def test_json_scalars_read_as_before(field: str, value: Any) -> None:
    _same({field: value}, from_json=True)
    _same({field: value}, from_json=False)


# Ids stable across processes (pytest-xdist workers must collect the same ids): no address.
@pytest.mark.parametrize(
    "value", PYTHON_ONLY, ids=lambda v: "object()" if type(v) is object else repr(v)
)
@pytest.mark.parametrize("field", ["at", "raw", "metadata"])
def test_python_values_read_as_before(field: str, value: Any) -> None:
    _same({field: value}, from_json=False)


@pytest.mark.parametrize("value", METADATA)
def test_metadata_reads_as_before(value: Any) -> None:
    _same({"metadata": value}, from_json=True)
    _same({"metadata": value}, from_json=False)


def test_several_bad_fields_report_the_same_errors() -> None:
    data = {"at": "nope", "raw": 5, "metadata": {"wandb": {"url": 5}}, "extra": None}
    _same(data, from_json=True)
    _same(data, from_json=False)


def test_missing_fields_read_as_before() -> None:
    _same({}, from_json=True)
    _same({}, from_json=False)


def test_serialization_and_json_schema_unchanged() -> None:
    data = {"at": "2026-05-01T12:00:00Z", "raw": None, "metadata": None}
    old, new = Old.model_validate_json(json.dumps(data)), New.model_validate_json(json.dumps(data))
    for kwargs in ({}, {"mode": "json"}, {"by_alias": True}, {"exclude_unset": True}):
        assert new.model_dump(**kwargs) == old.model_dump(**kwargs)  # type: ignore[arg-type]
    assert new.model_dump_json(round_trip=True) == old.model_dump_json(round_trip=True)
    new.metadata = None  # type: ignore[assignment]  # a caller's assignment still serializes
    old.metadata = None  # type: ignore[assignment]
    assert new.model_dump_json() == old.model_dump_json()
    for mode in ("validation", "serialization"):
        old_schema = Old.model_json_schema(mode=mode)
        old_schema["title"] = "New"
        assert New.model_json_schema(mode=mode) == old_schema


def test_a_session_reads_blank_and_null_spellings() -> None:
    raw = {"id": "s", "status": None, "created_at": "", "updated_at": None, "metadata": None}
    session = TrainingSession.model_validate_json(json.dumps(raw))
    assert (session.raw_status, session.created_at, session.updated_at) == ("", None, None)
    assert session.metadata == SessionMetadata() and session.wandb_url is None
    assert session.model_fields_set == {"id", "raw_status", "created_at", "updated_at", "metadata"}
