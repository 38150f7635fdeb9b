"""Field types that read the API's "not set" spellings natively, without slowing a page down.

``null`` for a list or a block, ``{}`` for an unset registration and ``""`` for a timestamp
all mean "not set". The conversions here run *after* pydantic-core has validated the value:
a ``mode="before"`` validator on a list or object field makes pydantic-core build that whole
value as Python objects first and validate it a second time from them, which was most of the
cost of reading a page (``Page.data`` is such a field). Only strings go through a before
validator (cheap: nothing to build).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator

T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _null_is_blank(value: Any) -> Any:
    return "" if value is None else value


def _none_is_empty_list(value: list[Any] | None) -> list[Any]:
    return [] if value is None else value


def _empty_is_none(value: Any) -> Any:
    """``""``, ``{}`` and an object with no field set (proto-JSON of an unset message): None."""
    if value == "" or (
        isinstance(value, BaseModel) and not value.model_fields_set and not value.model_extra
    ):
        return None
    return value


#: A timestamp that may be missing, null or ``""`` (all mean "not set").
Timestamp = Annotated[datetime | None, BeforeValidator(_blank_is_none)]
#: A raw enum string; ``null`` reads as ``""`` (which parses to ``UNKNOWN``).
RawEnum = Annotated[str, BeforeValidator(_null_is_blank)]

if TYPE_CHECKING:  # what the attribute holds
    ListOrNull = Annotated[list[T], "null reads as []"]
    EmptyIsNone = Annotated[B | None, "{} and '' read as None"]
else:
    #: A list the API may send as ``null``; always a list once read.
    ListOrNull = Annotated[list[T] | None, AfterValidator(_none_is_empty_list)]
    #: An optional object whose unset form (``{}``, ``""``) reads as None.
    EmptyIsNone = Annotated[B | Literal[""] | None, AfterValidator(_empty_is_none)]
