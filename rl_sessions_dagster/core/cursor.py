"""What the trackers' state models share: one base class, compact ids, a cheap copy, and the
one error a cursor read raises.

Each tracker's state is one pydantic model that is also its cursor: short field aliases,
``model_dump_json(by_alias=True, exclude_defaults=True)`` to write it, ``model_validate_json``
to read it. Dagster copies the cursor into every tick row, so ids are written compactly too:
a canonical UUID (what the API issues) becomes ``~`` + its 16 bytes in base64url (23
characters instead of 36). Cursors are read with ``COMPACT_IDS`` in the validation context;
a model validated from Python (tests, code) takes ids literally.
"""

import base64
import copy
import functools
import re
import uuid
from dataclasses import is_dataclass
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    ValidationInfo,
)


class CursorError(ValueError):
    """The cursor could not be read (corrupt, foreign, or from another version)."""


#: validation context of a cursor whose ids are compact.
COMPACT_IDS = {"compact_ids": True}


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# Both are cached: the same ids are written and read on every tick.
@functools.lru_cache(maxsize=8192)
def compact_id(value: str) -> str:
    """A canonical UUID as ``~`` + base64url of its bytes; any other id as itself (with one
    more ``~`` in front if it starts with one, so the two never meet)."""
    if _UUID.match(value):
        return "~" + base64.urlsafe_b64encode(bytes.fromhex(value.replace("-", ""))).decode()[:22]
    return "~" + value if value.startswith("~") else value


@functools.lru_cache(maxsize=8192)
def expand_id(value: str) -> str:
    if not value.startswith("~"):
        return value
    if value.startswith("~~"):
        return value[1:]
    try:
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(value[1:] + "==")))
    except ValueError:
        raise ValueError(f"not a compact id: {value!r}") from None


def _read_id(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str) and info.context and info.context.get("compact_ids"):
        return expand_id(value)
    return value


#: a session, checkpoint or resource id: written compactly, read back as the API spells it.
Id = Annotated[str, BeforeValidator(_read_id), PlainSerializer(compact_id, when_used="json")]


class LetterCodes:
    """Known raw statuses written as one letter each; any other status (one newer than this
    library) is written and read back as sent, so drift never breaks a cursor."""

    def __init__(self, codes: dict[str, str]) -> None:
        self.codes = dict(codes)
        self.raws = {code: raw for raw, code in codes.items()}

    def encode(self, raw: str) -> str:
        return self.codes.get(raw, raw)

    def decode(self, code: str) -> str:
        return self.raws.get(code, code)


class StateModel(BaseModel):
    """Base of the state models: mutable (the trackers update the next state in place), read
    by field name or alias, and strict about unknown keys (a foreign cursor is an error).
    Schemas are built at the first tick, not when a definitions file imports the sensors."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, extra="forbid", defer_build=True
    )


class CursorState(StateModel):
    """A tracker's whole state, which is also its cursor: :meth:`to_cursor` writes it and
    :meth:`from_cursor` reads it back in one native pass."""

    #: False until the first tick has run (not written: a cursor exists only after one).
    initialized: bool = Field(False, exclude=True)

    #: The cursor's name in errors.
    _what: ClassVar[str] = "cursor"

    def to_cursor(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_defaults=True)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> Self:
        """Parse a cursor; empty means a first tick. Raises CursorError on anything unreadable."""
        if not cursor:
            return cls()
        try:
            state = cls.model_validate_json(cursor, context=COMPACT_IDS)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CursorError(f"unreadable {cls._what}: {where}: {first['msg']}") from None
        state.initialized = True
        return state


M = TypeVar("M", bound=BaseModel)


def fork(model: M) -> M:
    """A copy whose containers and nested mutable models are copies too (frozen models and
    scalars are shared): what ``advance`` changes, without copying through JSON or paying for
    ``copy.deepcopy``'s generality. Built the way ``model_copy`` builds a copy, minus its
    per-call overhead (a tick forks every tracked entry)."""
    copied = object.__new__(type(model))
    state = {k: v if type(v) in _LEAVES else _fork_value(v) for k, v in model.__dict__.items()}
    object.__setattr__(copied, "__dict__", state)
    object.__setattr__(copied, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    for slot in ("__pydantic_extra__", "__pydantic_private__"):  # None with our config
        value = getattr(model, slot)
        object.__setattr__(copied, slot, None if value is None else copy.copy(value))
    return copied


_LEAVES = frozenset({int, str, bool, float, type(None)})


def _fork_value(value: Any) -> Any:
    if type(value) in _LEAVES:
        return value
    if isinstance(value, BaseModel):
        return value if value.model_config.get("frozen") else fork(value)
    if isinstance(value, list):
        return [_fork_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _fork_value(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return copy.copy(value)  # OrderEvidence: scalars only
    return value
