"""Field types that read the API's "not set" spellings natively, without slowing a page down.

``null`` for a list or a block, ``{}`` for an unset registration and ``""`` for a timestamp
all mean "not set". ``Timestamp`` and ``RawEnum`` (about 13 fields per session of the
simulator's populated world, checkpoints included) convert in pydantic-core: the ``mode="before"``
validators they replace cost a Python call per field and, worse, made pydantic-core build a
Python string of every timestamp before parsing it (about 7% of reading that page). Their
markers wrap the type's own schema without a union at the top: a union adds its branch name
to every error's location (``pages.salvage`` follows locations into the input) and reports
each branch's error; see :func:`_spelled`.

``ListOrNull`` and ``EmptyIsNone`` run *after* pydantic-core has validated the value (one
call per page, per checkpoint of a checkpoint page): a ``mode="before"`` validator on a list
or object field makes pydantic-core build that whole value as Python objects first and
validate it a second time from them. A native version of such an after validator (as tried
for ``MetadataOrNull``) measured no faster: the call is cheap, the object is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema as cs

T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)


def _none_is_empty_list(value: list[Any] | None) -> list[Any]:
    return [] if value is None else value


def _empty_is_none(value: Any) -> Any:
    """``""``, ``{}`` and an object with no field set (proto-JSON of an unset message): None."""
    if value == "" or (
        isinstance(value, BaseModel) and not value.model_fields_set and not value.model_extra
    ):
        return None
    return value


def _replace(value: Any, spelling: cs.CoreSchema) -> cs.CoreSchema:
    """Turn an input ``spelling`` accepts into ``value``; natively, and never an error.

    ``with_default`` over a schema that rejects what ``spelling`` let through returns the
    default without calling Python (the default is immutable: not copied).
    """
    return cs.chain_schema(
        [
            spelling,
            cs.with_default_schema(
                cs.is_instance_schema(_Never), default=value, on_error="default"
            ),
        ]
    )


class _Never:
    """No value is an instance: ``_replace`` always falls back to its default."""


class _Marker:
    """Base: the JSON schema is the wrapped type's own (the last step of the chain)."""

    def __get_pydantic_json_schema__(
        self, schema: cs.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        if schema.get("type") == "chain":
            schema = schema["steps"][-1]
        return handler(schema)


def _spelled(schema: cs.CoreSchema, spelling: cs.CoreSchema, value: Any) -> cs.CoreSchema:
    """``schema``, except that an input ``spelling`` accepts (and ``schema`` rejects) is ``value``.

    Step 1 never fails: ``schema`` on the raw input (from JSON: no Python copy first), else
    ``value`` for the spelling, else the input's Python value unchanged (``any``). Step 2 is
    ``schema`` again: a value step 1 produced passes as is, and a rejected input is rejected
    by ``schema`` alone, with its own error and location, as the before validator this
    replaces let it be (it, too, gave ``schema`` the Python value of the input).
    """
    first = cs.union_schema(
        [schema, _replace(value, spelling), cs.any_schema()], mode="left_to_right"
    )
    return cs.chain_schema([first, schema])


@dataclass(frozen=True)
class _BlankIsNone(_Marker):
    """``""`` reads as None; everything else goes to the type's schema."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        return _spelled(handler(source), cs.literal_schema([""]), None)


@dataclass(frozen=True)
class _NullIsBlank(_Marker):
    """``null`` reads as ``""``; everything else goes to the type's schema."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        return _spelled(handler(source), cs.none_schema(), "")


#: A timestamp that may be missing, null or ``""`` (all mean "not set").
Timestamp = Annotated[datetime | None, _BlankIsNone()]
#: A raw enum string; ``null`` reads as ``""`` (which parses to ``UNKNOWN``).
RawEnum = Annotated[str, _NullIsBlank()]

if TYPE_CHECKING:  # what the attribute holds
    ListOrNull = Annotated[list[T], "null reads as []"]
    EmptyIsNone = Annotated[B | None, "{} and '' read as None"]
else:
    #: A list the API may send as ``null``; always a list once read.
    ListOrNull = Annotated[list[T] | None, AfterValidator(_none_is_empty_list)]
    #: An optional object whose unset form (``{}``, ``""``) reads as None.
    EmptyIsNone = Annotated[B | Literal[""] | None, AfterValidator(_empty_is_none)]
