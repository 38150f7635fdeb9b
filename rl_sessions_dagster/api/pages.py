"""Reading the API's JSON fast and tolerantly: field types, lazy lists, pages. A page failing the
one native pass is read item by item, so one malformed session cannot stall a sensor forever."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, get_args, overload

import pydantic
from pydantic import AfterValidator, BaseModel, Field
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema as cs

from .errors import scrub

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# Types for the API's "not set" spellings (null list, {}, ""): no top union (its branch names
# would enter the error locations ``salvage`` follows); after validators (a before one runs twice).


def _empty_is_none(value: Any) -> Any:
    """``""``, ``{}`` and an object with no field set (proto-JSON of an unset message): None."""
    unset = isinstance(value, BaseModel) and not value.model_fields_set and not value.model_extra
    return None if value == "" or unset else value


@dataclass(frozen=True)
class _Spelling:
    """An input ``spelling`` (``""`` or ``null``) that reads as ``value``."""

    null: bool
    value: Any

    def __get_pydantic_core_schema__(
        self, source: Any, handler: pydantic.GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        """Step 1 never fails: the schema, else ``value`` for the spelling, else the input as is;
        step 2, the schema again, gives a rejected input the schema's own error and location."""
        schema = handler(source)
        spelling = cs.none_schema() if self.null else cs.literal_schema([""])
        never = cs.is_instance_schema(_Spelling)
        value = cs.with_default_schema(never, default=self.value, on_error="default")
        replace = cs.chain_schema([spelling, value])
        first = cs.union_schema([schema, replace, cs.any_schema()], mode="left_to_right")
        return cs.chain_schema([first, schema])

    def __get_pydantic_json_schema__(
        self, schema: cs.CoreSchema, handler: pydantic.GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(schema["steps"][-1] if schema.get("type") == "chain" else schema)


#: A timestamp that may be missing, null or ``""`` (all mean "not set").
Timestamp = Annotated[datetime | None, _Spelling(null=False, value=None)]
#: A raw enum string; ``null`` reads as ``""`` (which parses to ``UNKNOWN``).
RawEnum = Annotated[str, _Spelling(null=True, value="")]

if TYPE_CHECKING:  # what the attribute holds
    ListOrNull = Annotated[list[T], "null reads as []"]
    EmptyIsNone = Annotated[M | None, "{} and '' read as None"]
else:
    #: A list the API may send as ``null``; always a list once read.
    ListOrNull = Annotated[list[T] | None, AfterValidator(lambda v: [] if v is None else v)]
    #: An optional object whose unset form (``{}``, ``""``) reads as None.
    EmptyIsNone = Annotated[M | Literal[""] | None, AfterValidator(_empty_is_none)]


@functools.cache
def _adapter(model: type[BaseModel]) -> pydantic.TypeAdapter[list[Any]]:
    return pydantic.TypeAdapter(list[model])  # type: ignore[valid-type]


class LazyList(Sequence[M], Generic[M]):
    """A read-only list of ``M`` kept as validated dicts (a bad item still fails its page) until
    first use: pages embed ~1,000 checkpoints few readers use; as models, paging is ~2.4x slower."""

    __slots__ = ("_items", "_model", "_raw")

    def __init__(
        self, model: type[M], raw: list[dict[str, Any]] | None = None, items: list[M] | None = None
    ) -> None:
        self._model, self._raw = model, raw
        self._items: list[M] | None = None if raw else items or []

    @classmethod
    def empty(cls, model: type[M]) -> LazyList[M]:
        """The one empty list of ``model``, shared by every session without checkpoints."""
        return _empty(cls, model)

    def _built(self) -> list[M]:
        items = self._items
        if items is None:
            items = self._items = _adapter(self._model).validate_python(self._raw)
            self._raw = None
        return items

    @overload
    def __getitem__(self, index: int) -> M: ...
    @overload
    def __getitem__(self, index: slice) -> list[M]: ...
    def __getitem__(self, index: int | slice) -> M | list[M]:
        return self._built()[index]

    def __iter__(self) -> Iterator[M]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built() if self._raw is None else self._raw)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyList | list | tuple):
            return self._built() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like list

    def __repr__(self) -> str:
        return repr(self._built())

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyList, (self._model, None, self._built()))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: pydantic.GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        (model,) = get_args(source)
        models = handler.generate_schema(list[model])  # type: ignore[valid-type]
        schema = model.__pydantic_core_schema__
        if not isinstance(schema, dict):  # a placeholder until first use (``defer_build``)
            model.model_rebuild(force=True)
            schema = model.__pydantic_core_schema__
        dicts = cs.list_schema(_as_dicts(schema, {}))
        deferred = cs.no_info_after_validator_function(
            lambda raw: cls(model, raw) if raw else cls.empty(model), cs.nullable_schema(dicts)
        )
        built = cs.no_info_after_validator_function(
            lambda items: cls(model, None, items), cs.nullable_schema(models)
        )
        return cs.json_or_python_schema(
            json_schema=deferred,
            # No union here: its branch name would enter error locations (see ``salvage``).
            python_schema=cs.no_info_before_validator_function(_as_list, built),
            serialization=cs.plain_serializer_function_ser_schema(_as_list, return_schema=models),
        )


_empty = functools.cache(lambda cls, model: cls(model))


def _as_list(value: Any) -> Any:
    return value._built() if isinstance(value, LazyList) else value


def _as_dicts(node: Any, defs: dict[str, Any]) -> Any:
    """A core schema with every model as a typed dict (missing fields stay missing: the same
    ``model_fields_set`` later); the models must be plain (no validators, no ``__init__``)."""
    if isinstance(node, list):
        return [_as_dicts(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind in ("function-after", "function-wrap", "function-plain", "model-fields"):
        raise TypeError(f"LazyList: a {kind} validator under a deferred model")
    if kind == "definitions":
        local = {**defs, **{d["ref"]: d for d in node["definitions"]}}
        return _as_dicts(node["schema"], local)
    if kind == "definition-ref":  # inlined, converted where it is used
        return _as_dicts(defs[node["schema_ref"]], defs)
    if kind != "model":
        return {k: _as_dicts(v, defs) if k.endswith("schema") else v for k, v in node.items()}
    fields = {}
    for field_name, field in node["schema"]["fields"].items():
        schema = field["schema"]
        required = schema.get("type") != "default"
        fields[field_name] = cs.typed_dict_field(
            _as_dicts(schema if required else schema["schema"], defs),
            required=required,  # a missing field stays missing
            validation_alias=field.get("validation_alias"),
        )
    config = node.get("config") or {}
    extra = config.get("extra_fields_behavior", "ignore")
    alias, name = config.get("validate_by_alias", True), config.get("validate_by_name", False)
    core = cs.CoreConfig(
        extra_fields_behavior=extra, validate_by_alias=alias, validate_by_name=name
    )
    return cs.typed_dict_schema(fields, extra_behavior=extra, config=core)


#: Longest ``SkippedItem.reason``.
REASON_CHARS = 200
#: Repair rounds per item: each nulls the fields the previous validation rejected.
_MAX_ROUNDS = 8
_REMOVE = object()


@dataclass(frozen=True)
class SkippedItem:
    """A list item that could not be read: its ``id`` if a string or int, the failing
    ``field`` (``""`` for the item), pydantic's ``reason`` (scrubbed, capped, no input value)."""

    id: str | None
    field: str
    reason: str


class PageMeta(BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    limit: int | None = None
    has_more: bool | None = None
    next_cursor: str | None = None


if TYPE_CHECKING:
    MetaOrNull = PageMeta
else:
    MetaOrNull = Annotated[
        PageMeta | None, AfterValidator(lambda v: PageMeta() if v is None else v)
    ]


class Page(BaseModel, Generic[T]):
    """One page of a list endpoint. ``data``/``meta`` may be omitted when empty (proto-JSON);
    ``skipped`` (client-side, not dumped) lists the items this client could not read."""

    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    data: ListOrNull[T] = Field(default_factory=list)
    meta: MetaOrNull = Field(default_factory=PageMeta)
    skipped: list[SkippedItem] = Field(default_factory=list, exclude=True)

    @property
    def next_cursor(self) -> str | None:
        """The ``after`` value for the next page, or None when this is the last page."""
        return None if self.meta.has_more is False else self.meta.next_cursor or None


def _navigable(obj: Any, loc: Iterable[Any]) -> tuple[Any, ...]:
    """The longest prefix of ``loc`` that addresses real keys/indices of ``obj``."""
    out: list[Any] = []
    for part in loc:
        in_dict = isinstance(obj, dict) and isinstance(part, str) and part in obj
        in_list = isinstance(obj, list) and isinstance(part, int) and 0 <= part < len(obj)
        if not (in_dict or in_list):
            break
        obj = obj[part]
        out.append(part)
    return tuple(out)


def salvage(
    model: type[M], raw: Any, error: pydantic.ValidationError | None = None
) -> tuple[M | None, pydantic.ValidationError | None]:
    """``(instance, None)`` reading ``raw`` with each rejected value set to None (a list element
    removed; rejected again, i.e. required: its parent, up to the item), raw values in
    ``invalid_fields`` (dotted path → value) if the model has it; else ``(None, last_error)``."""
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
            target = _navigable(obj, e["loc"])
            while target in nulled:  # nulled and still rejected: a required field
                target = target[:-1]
            if not target:
                return None, error
            edits[target] = _REMOVE if isinstance(target[-1], int) else None
        # Deepest first, then highest index first: no edit moves a location still to edit.
        order = sorted(edits, key=lambda t: (len(t), t[-1] if isinstance(t[-1], int) else -1))
        for loc in reversed(order):
            parent = functools.reduce(lambda o, part: o[part], loc[:-1], obj)
            invalid[".".join(map(str, loc))] = parent[loc[-1]]
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
    """Read a page item by item (after the whole-page parse failed); None if not a page (its
    ``data`` must be a list and its ``meta`` an object, either absent or null)."""
    args = model.__pydantic_generic_metadata__.get("args") if issubclass(model, Page) else None
    item_model = args[0] if args else None
    if not (isinstance(item_model, type) and issubclass(item_model, BaseModel)):
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
        except pydantic.ValidationError as exc:
            instance, error = salvage(item_model, raw, exc)
            if instance is not None:
                good.append(instance)
            else:
                skipped.append(skipped_item(raw, error, secrets))
    envelope = {k: v for k, v in doc.items() if k not in ("data", "meta", "skipped")}
    page = model.model_validate({**envelope, "meta": meta or PageMeta()})
    page.data, page.skipped = good, skipped
    return page


def skipped_item(
    raw: Any, error: pydantic.ValidationError | None, secrets: Iterable[str | None] = ()
) -> SkippedItem:
    """The record of an unreadable item: its id if readable, the first failing field, why."""
    value = raw.get("id") if isinstance(raw, dict) else None
    item_id = None if isinstance(value, bool) or not isinstance(value, str | int) else str(value)
    if error is None:
        return SkippedItem(item_id, "", "item is not a JSON object")
    first = error.errors(include_url=False, include_input=False)[0]
    reason = first["msg"]
    if error.error_count() > 1:
        reason += f" (+{error.error_count() - 1} more)"
    reason = scrub(reason, secrets)
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return SkippedItem(item_id, ".".join(map(str, first["loc"])), reason)
