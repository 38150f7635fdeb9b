"""Field types that read the API's "not set" spellings natively, without slowing a page down.

``null`` for a list or a block, ``{}`` for an unset registration and ``""`` for a timestamp
all mean "not set". The conversions run in pydantic-core: a Python validator per field was
most of the cost of reading a page (a 100-session page of the simulator's world made ~1,500
calls), and a ``mode="before"`` validator on a list or object field also makes pydantic-core
build that whole value as Python objects first and validate it a second time from them.

Each marker (:class:`_BlankIsNone`, :class:`_NullIsBlank`, :class:`NullIs`) wraps the type's own
schema without a union at the top: a union would add its branch name to the location of every
error (``pages.salvage`` follows locations into the input) and report each branch's error.
Instead, a step that can never fail rewrites the "not set" spelling, and the type's own schema
reports errors exactly where and as it did before. ``ListOrNull`` and ``EmptyIsNone`` still use
an after validator (one call per page, per checkpoint of a checkpoint page).
"""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(frozen=True)
class _BlankIsNone(_Marker):
    """``""`` reads as None; everything else goes to the type's schema unchanged.

    Like the ``mode="before"`` validator this replaces, the type's schema validates the
    Python value of the input (``any`` step): same accepted values, errors and locations.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        before = cs.union_schema(
            [
                cs.str_schema(strict=True, min_length=1),  # the common case: no error built
                cs.none_schema(),
                _replace(None, cs.literal_schema([""])),
                cs.any_schema(),  # never fails: this union never reports an error
            ],
            mode="left_to_right",
        )
        return cs.chain_schema([before, handler(source)])


@dataclass(frozen=True)
class _NullIsBlank(_Marker):
    """``null`` reads as ``""``; everything else goes to the type's schema unchanged."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        before = cs.union_schema(
            [cs.str_schema(strict=True), _replace("", cs.none_schema()), cs.any_schema()],
            mode="left_to_right",
        )
        return cs.chain_schema([before, handler(source)])


@dataclass(frozen=True)
class NullIs(_Marker):
    """On ``X | None``: ``null`` reads as ``factory()`` (called only for a null).

    The type's schema validates the input first (natively, from JSON: no Python copy of a
    nested object), then a None becomes ``factory()``, then the type's schema runs once
    more on the result (an instance of ``X``: returned as is) so that serialization and
    the JSON schema are the type's own.
    """

    factory: Callable[[], Any]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        schema = handler(source)
        if schema.get("type") != "nullable":
            raise TypeError(f"NullIs needs an optional type, got {source!r}")
        instance = cs.is_instance_schema(type(self.factory()))
        fill = cs.with_default_schema(instance, default_factory=self.factory, on_error="default")
        return cs.chain_schema([schema, fill, schema])


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
