"""List pages, and the slow path that keeps a page when some of its items do not parse.

A page is parsed in one native pass (``model_validate_json`` on the raw bytes). Only when that
fails does :func:`parse_page` read the page item by item: good items are kept, an item whose
optional fields do not parse keeps them as ``None`` (raw values in ``invalid_fields``, see
:func:`salvage`), and an item that still does not parse (no ``id``, not an object) becomes a
:class:`SkippedItem`. ``meta`` is read either way, so paging goes on past a bad item: one
malformed session must not stop a sensor at that page forever.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

import pydantic
from pydantic import AfterValidator, BaseModel, Field

from .errors import scrub
from .fields import ListOrNull

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: Longest ``SkippedItem.reason``.
REASON_CHARS = 200
#: Repair rounds per item: each nulls the fields the previous validation rejected.
_MAX_ROUNDS = 8
_REMOVE = object()


@dataclass(frozen=True)
class SkippedItem:
    """A list item that could not be read, and why. Its neighbours on the page were kept.

    ``id`` is the item's ``id`` when it is a string or an integer, else None; ``field`` is the
    failing location inside the item (pydantic ``loc`` joined with ``.``; ``""`` for the item
    itself); ``reason`` is pydantic's message, scrubbed of secrets and capped (it never holds
    the input value).
    """

    id: str | None
    field: str
    reason: str


class PageMeta(BaseModel):
    """Paging metadata; unknown fields kept."""

    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    limit: int | None = None
    has_more: bool | None = None
    next_cursor: str | None = None


def _meta_or_empty(value: PageMeta | None) -> PageMeta:
    return PageMeta() if value is None else value


if TYPE_CHECKING:
    MetaOrNull = PageMeta
else:
    MetaOrNull = Annotated[PageMeta | None, AfterValidator(_meta_or_empty)]


class Page(BaseModel, Generic[T]):
    """One page of a list endpoint. ``data``/``meta`` may be omitted when empty (proto-JSON).

    ``skipped`` lists the items this client could not read (empty on the fast path); it is
    client-side information and is not part of :meth:`model_dump`.
    """

    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    data: ListOrNull[T] = Field(default_factory=list)
    meta: MetaOrNull = Field(default_factory=PageMeta)
    skipped: list[SkippedItem] = Field(default_factory=list, exclude=True)

    @property
    def next_cursor(self) -> str | None:
        """The ``after`` value for the next page, or None when this is the last page."""
        if self.meta.has_more is False or not self.meta.next_cursor:
            return None
        return self.meta.next_cursor


def page_item_model(model: type[BaseModel]) -> type[BaseModel] | None:
    """``TrainingSession`` for ``Page[TrainingSession]``; None for anything else."""
    if not (isinstance(model, type) and issubclass(model, Page)):
        return None
    args = model.__pydantic_generic_metadata__.get("args") or ()
    item = args[0] if args else None
    return item if isinstance(item, type) and issubclass(item, BaseModel) else None


def _loc(loc: Iterable[Any]) -> str:
    return ".".join(map(str, loc))


def _readable_id(raw: Any) -> str | None:
    value = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _navigable(obj: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The longest prefix of ``loc`` that addresses real keys/indices of ``obj``.

    Union and validator steps (``'str'``, ``'function-after[...]'``) are not keys; they end
    the prefix.
    """
    out: list[Any] = []
    for part in loc:
        in_dict = isinstance(obj, dict) and isinstance(part, str) and part in obj
        in_list = isinstance(obj, list) and isinstance(part, int) and 0 <= part < len(obj)
        if not (in_dict or in_list):
            break
        obj = obj[part]
        out.append(part)
    return tuple(out)


def _get(obj: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        obj = obj[part]
    return obj


def _edit_order(loc: tuple[Any, ...]) -> tuple[int, int]:
    return (len(loc), loc[-1] if isinstance(loc[-1], int) else -1)


def salvage(
    model: type[M], raw: Any, error: pydantic.ValidationError | None = None
) -> tuple[M | None, pydantic.ValidationError | None]:
    """Read ``raw`` as ``model`` after setting the values it rejects to None.

    The slow path only: each round nulls every rejected location (a list element is removed
    instead) and validates again; a location rejected again once nulled (a required field) is
    widened to its parent. The item fails when the widening reaches the item itself. Raw
    values of nulled locations go to ``invalid_fields`` (dotted path → value) when the model
    has that field. Returns ``(instance, None)`` or ``(None, last_error)``.
    """
    if not isinstance(raw, dict):
        return None, error
    obj = json.loads(json.dumps(raw))  # a private copy to edit
    invalid: dict[str, Any] = {}
    nulled: set[tuple[Any, ...]] = set()
    for _ in range(_MAX_ROUNDS):
        if error is None:
            try:
                instance = model.model_validate(obj)
            except pydantic.ValidationError as exc:
                error = exc
            else:
                if invalid and "invalid_fields" in model.model_fields:
                    instance.invalid_fields = invalid  # type: ignore[attr-defined]
                return instance, None
        edits: dict[tuple[Any, ...], Any] = {}
        for e in error.errors(include_url=False, include_input=False):
            # A missing key leaves its parent unreadable; otherwise the deepest real location.
            target = _navigable(obj, tuple(e["loc"]))
            while target in nulled:  # nulled and still rejected: a required field
                target = target[:-1]
            if not target:
                return None, error
            edits[target] = _REMOVE if isinstance(target[-1], int) else None
        # Deepest first, then highest index first: no edit moves a location still to edit.
        for loc in sorted(edits, key=_edit_order, reverse=True):
            parent = _get(obj, loc[:-1])
            invalid[_loc(loc)] = parent[loc[-1]]
            if edits[loc] is _REMOVE:
                del parent[loc[-1]]
            else:
                parent[loc[-1]] = None
                nulled.add(loc)
        error = None
    return None, error


def parse_page(
    model: type[Page[Any]], content: bytes, secrets: Iterable[str | None] = ()
) -> Page[Any] | None:
    """Read a page item by item (after the whole-page parse failed); None if not a page.

    The envelope must be a JSON object whose ``data`` is a list and whose ``meta`` is an
    object (either may be absent or null); anything else is not a page and the caller raises
    :class:`DecodeError` as before. A meta field that does not parse reads as None.
    """
    item_model = page_item_model(model)
    if item_model is None:
        return None
    try:
        doc = json.loads(content)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    items, raw_meta = doc.get("data"), doc.get("meta")
    if not isinstance(items, list | None) or not isinstance(raw_meta, dict | None):
        return None  # without a readable cursor, paging would stop silently
    meta, _ = salvage(PageMeta, raw_meta or {})
    secrets = tuple(secrets)
    good: list[Any] = []
    skipped: list[SkippedItem] = []
    for raw in items or ():
        try:
            good.append(item_model.model_validate(raw))
            continue
        except pydantic.ValidationError as exc:
            instance, error = salvage(item_model, raw, exc)
        if instance is not None:
            good.append(instance)
            continue
        skipped.append(skipped_item(raw, error, secrets))
    envelope = {k: v for k, v in doc.items() if k not in ("data", "meta", "skipped")}
    page = model.model_validate({**envelope, "meta": meta or PageMeta()})
    page.data = good
    page.skipped = skipped
    return page


def skipped_item(
    raw: Any, error: pydantic.ValidationError | None, secrets: Iterable[str | None] = ()
) -> SkippedItem:
    """The record of an unreadable item: its id if readable, the first failing field, why."""
    if error is None:
        return SkippedItem(_readable_id(raw), "", "item is not a JSON object")
    first = error.errors(include_url=False, include_input=False)[0]
    reason = first["msg"]
    if error.error_count() > 1:
        reason += f" (+{error.error_count() - 1} more)"
    reason = scrub(reason, secrets)
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return SkippedItem(_readable_id(raw), _loc(first["loc"]), reason)
