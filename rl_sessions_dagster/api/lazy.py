"""Deferred checkpoint lists: a 100-session page embeds ~3,000 checkpoint models that most
readers never look at, and the collector's passes over a code server's heap cost more the more
objects a page leaves alive. From JSON a :class:`LazyList` is validated natively with its page,
as typed dicts (every error surfaces where it would, so a bad checkpoint still sends its page to
the slow path), and built into models on first use; from Python the models are built at once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, get_args, overload

import pydantic
from pydantic import BaseModel
from pydantic_core import core_schema as cs

M = TypeVar("M", bound=BaseModel)

#: Wrappers that see the value a model would have (a dict here): not supported under a
#: deferred model, so a new validator there fails loudly at import instead of misreading.
_UNSUPPORTED = frozenset({"function-after", "function-wrap", "function-plain", "model-fields"})


@functools.cache
def _adapter(model: type[BaseModel]) -> pydantic.TypeAdapter[list[Any]]:
    return pydantic.TypeAdapter(list[model])  # type: ignore[valid-type]


class LazyList(Sequence[M], Generic[M]):
    """A read-only list of ``M``: the validated dicts until first use, then the models. Equal
    to a list (or tuple) of the same models; ``len`` does not build them."""

    __slots__ = ("_items", "_model", "_raw")

    def __init__(self, model: type[M], raw: list[dict[str, Any]] | None = None) -> None:
        self._model = model
        self._raw = raw
        self._items: list[M] | None = None if raw else []

    @classmethod
    def empty(cls, model: type[M]) -> LazyList[M]:
        """The one empty list of ``model``, shared by every session without checkpoints."""
        return _empty(cls, model)

    @classmethod
    def of(cls, model: type[M], items: list[M]) -> LazyList[M]:
        out = cls(model)
        out._items = items
        return out

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
        if isinstance(other, LazyList):
            return self._built() == other._built()
        if isinstance(other, list | tuple):
            return self._built() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like list

    def __repr__(self) -> str:
        return repr(self._built())

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyList.of, (self._model, self._built()))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: pydantic.GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        (model,) = get_args(source) or (None,)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"LazyList needs a model type argument, got {source!r}")
        models = handler.generate_schema(list[model])  # type: ignore[valid-type]
        schema = model.__pydantic_core_schema__
        if not isinstance(schema, dict):  # a placeholder until first use (``defer_build``)
            model.model_rebuild(force=True)
            schema = model.__pydantic_core_schema__
        dicts = cs.list_schema(_as_dicts(schema, {}, 0))

        def deferred(raw: list[dict[str, Any]] | None) -> LazyList[Any]:
            return cls(model, raw) if raw else _empty(cls, model)  # type: ignore[arg-type]

        def built(items: list[Any] | None) -> LazyList[Any]:
            return cls.of(model, items or [])  # type: ignore[arg-type]

        return cs.json_or_python_schema(
            json_schema=cs.no_info_after_validator_function(deferred, cs.nullable_schema(dicts)),
            # No union here: its branch name would enter error locations (see ``salvage``).
            python_schema=cs.no_info_before_validator_function(
                _as_list, cs.no_info_after_validator_function(built, cs.nullable_schema(models))
            ),
            serialization=cs.plain_serializer_function_ser_schema(_as_list, return_schema=models),
        )


@functools.cache
def _empty(cls: type[LazyList[Any]], model: type[BaseModel]) -> LazyList[Any]:
    return cls(model)


def _as_list(value: Any) -> Any:
    return value._built() if isinstance(value, LazyList) else value


def _as_dicts(node: Any, defs: dict[str, Any], depth: int) -> Any:
    """A core schema with every model as a typed dict of the same fields; missing fields stay
    missing, so the model built later has the same ``model_fields_set``."""
    if depth > 50:
        raise TypeError("LazyList: recursive models are not supported")
    if isinstance(node, list):
        return [_as_dicts(n, defs, depth + 1) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind in _UNSUPPORTED:
        raise TypeError(f"LazyList: a {kind} validator under a deferred model")
    if kind == "definitions":
        local = dict(defs)
        local.update((d["ref"], d) for d in node["definitions"])
        return _as_dicts(node["schema"], local, depth + 1)
    if kind == "definition-ref":  # inlined, converted where it is used
        return _as_dicts(defs[node["schema_ref"]], defs, depth + 1)
    if kind != "model":
        return {
            key: _as_dicts(value, defs, depth + 1) if key.endswith("schema") else value
            for key, value in node.items()
        }
    inner = node["schema"]
    custom = node.get("custom_init") or node.get("post_init") or node.get("root_model")
    if custom or inner.get("type") != "model-fields" or inner.get("computed_fields"):
        raise TypeError(f"LazyList: {node['cls'].__name__} has custom construction or fields")
    fields = {}
    for field_name, field in inner["fields"].items():
        schema = field["schema"]
        required = schema.get("type") != "default"
        fields[field_name] = cs.typed_dict_field(
            _as_dicts(schema if required else schema["schema"], defs, depth + 1),
            required=required,  # a missing field stays missing
            validation_alias=field.get("validation_alias"),
        )
    config = node.get("config") or {}
    extra = config.get("extra_fields_behavior", "ignore")
    return cs.typed_dict_schema(
        fields,
        extra_behavior=extra,
        config=cs.CoreConfig(
            extra_fields_behavior=extra,
            validate_by_alias=config.get("validate_by_alias", True),
            validate_by_name=config.get("validate_by_name", False),
        ),
    )
