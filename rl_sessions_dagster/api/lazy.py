"""A list of nested models that is validated with its page but built into models on first use.

A session embeds about ten checkpoints, each with a registration and a registry artifact: a
100-session page is ~3,000 nested model instances, ~8,000 objects the garbage collector tracks
(``json.loads`` makes ~2,400 for the same page). Most readers of a page (the sensors' scans of
finished sessions, a count) never look at most sessions' checkpoints, and the collector's full
passes over a large heap (a code server's, with Dagster loaded) cost more the more objects a
page leaves alive. So a :class:`LazyList` field read from JSON is validated natively, with its
page, against the *same* types turned into dicts (every error surfaces at the same place as
before, so a bad checkpoint still sends its page to the slow path in ``pages.py``), and the
models are built from those dicts on first use (natively again, once).

From Python (``model_validate`` of a dict, the slow path, a test building a session) the
models are built at once: only JSON input is deferred.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_args, overload

from pydantic import BaseModel, GetCoreSchemaHandler, TypeAdapter
from pydantic_core import core_schema

M = TypeVar("M", bound=BaseModel)

#: Wrappers that see the value a model would have (a dict here): not supported under a
#: deferred model, so a new validator there fails loudly at import instead of misreading.
_UNSUPPORTED = frozenset({"function-after", "function-wrap", "function-plain", "model-fields"})


@functools.cache
def _adapter(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


class LazyList(Sequence[M], Generic[M]):
    """A read-only list of ``M``: the validated dicts until first use, then the models.

    Compares equal to a list (or tuple) of the same models; ``len`` does not build them.
    """

    __slots__ = ("_items", "_model", "_raw")

    def __init__(self, model: type[M], raw: list[dict[str, Any]] | None = None) -> None:
        self._model = model
        self._raw = raw
        self._items: list[M] | None = None if raw else []

    @classmethod
    def empty(cls, model: type[M]) -> LazyList[M]:
        """The one empty list of ``model``: read-only, so every session without checkpoints
        shares it (a page of them allocated two lists per session)."""
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
        return (
            len(self._raw) if self._items is None and self._raw is not None else len(self._built())
        )

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
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        (model,) = get_args(source) or (None,)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"LazyList needs a model type argument, got {source!r}")
        models = handler.generate_schema(list[model])  # type: ignore[valid-type]
        compact = core_schema.list_schema(compact_schema(_built_schema(model)))

        def deferred(raw: list[dict[str, Any]] | None) -> LazyList[Any]:
            return cls(model, raw) if raw else _empty(cls, model)  # type: ignore[arg-type]

        def built(items: list[Any] | None) -> LazyList[Any]:
            return cls.of(model, items or [])  # type: ignore[arg-type]

        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_after_validator_function(
                deferred, core_schema.nullable_schema(compact)
            ),
            # No union here: its branch name would enter error locations, which the slow
            # path (``pages.salvage``) follows into the input.
            python_schema=core_schema.no_info_before_validator_function(
                _as_list,
                core_schema.no_info_after_validator_function(
                    built, core_schema.nullable_schema(models)
                ),
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                _as_list, return_schema=models
            ),
        )


@functools.cache
def _empty(cls: type[LazyList[Any]], model: type[BaseModel]) -> LazyList[Any]:
    return cls(model)


def _built_schema(model: type[BaseModel]) -> Any:
    """The model's core schema, building it now if the model defers its build."""
    schema = model.__pydantic_core_schema__
    if not isinstance(schema, dict):  # a placeholder until first use (``defer_build``)
        model.model_rebuild(force=True)
        schema = model.__pydantic_core_schema__
    return schema


def _as_list(value: Any) -> Any:
    return value._built() if isinstance(value, LazyList) else value


def compact_schema(schema: Any) -> Any:
    """``schema`` with every model turned into a typed dict of the same fields and types.

    Missing fields stay missing (no defaults filled in), so the model built later from the
    dict has the same ``model_fields_set`` as one validated from the JSON; extra fields are
    kept when the model keeps them. Definitions are inlined (these models are not recursive).
    """
    return _convert(schema, {}, 0)


@dataclass(frozen=True)
class _Unconverted:
    schema: Any


def _convert(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if depth > 50:
        raise TypeError("compact_schema: recursive models are not supported")
    if isinstance(node, list):
        return [_convert(n, defs, depth + 1) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind in _UNSUPPORTED:
        raise TypeError(f"compact_schema: a {kind} validator under a deferred model")
    if kind == "definitions":
        local = dict(defs)
        local.update((d["ref"], _Unconverted(d)) for d in node["definitions"])
        return _convert(node["schema"], local, depth + 1)
    if kind == "definition-ref":
        found = defs[node["schema_ref"]]
        return _convert(found.schema, defs, depth + 1) if isinstance(found, _Unconverted) else found
    if kind == "model":
        return _typed_dict(node, defs, depth)
    return {
        key: _convert(value, defs, depth + 1) if key.endswith("schema") else value
        for key, value in node.items()
    }


def _typed_dict(model: dict[str, Any], defs: dict[str, Any], depth: int) -> Any:
    if model.get("custom_init") or model.get("post_init") or model.get("root_model"):
        raise TypeError(f"compact_schema: {model['cls'].__name__} has custom construction")
    inner = model["schema"]
    if inner.get("type") != "model-fields" or inner.get("computed_fields"):
        raise TypeError(f"compact_schema: unsupported schema of {model['cls'].__name__}")
    fields = {}
    for name, field in inner["fields"].items():
        schema = field["schema"]
        required = schema.get("type") != "default"
        if not required:
            schema = schema["schema"]  # a missing field stays missing
        fields[name] = core_schema.typed_dict_field(
            _convert(schema, defs, depth + 1),
            required=required,
            validation_alias=field.get("validation_alias"),
        )
    config = model.get("config") or {}
    extra = config.get("extra_fields_behavior", "ignore")
    return core_schema.typed_dict_schema(
        fields,
        extra_behavior=extra,
        config=core_schema.CoreConfig(
            extra_fields_behavior=extra,
            validate_by_alias=config.get("validate_by_alias", True),
            validate_by_name=config.get("validate_by_name", False),
        ),
    )
