"""The JSON schema ``dg check yaml`` validates ``defs.yaml`` against, made exact.

Dagster derives the Component's schema from its pydantic models but, in 1.13, (1) drops each
field's ``description`` (the derived field's own ``description=None`` wins the merge), and (2)
lets every non-string field also take *any* string, so that ``{{ env.X }}`` templates pass.
The second makes each nested section an ``anyOf``: a misspelled key inside ``sensor:`` is then
reported as "``sensor`` is not valid under any of the given schemas", at the parent's line and
without the key; an unknown event kind or ``minimum_interval_seconds: abc`` passes.

:func:`exact_schema` puts the descriptions back (from the models' own fields) and replaces each
such ``anyOf`` by "a template string, or else exactly the declared type" (``if``/``else``). With
no failing ``anyOf`` in the way, ``jsonschema`` reports the innermost error at its own path, so
``dg check yaml`` names the misspelled key, the unknown kind or the out-of-bounds number at its
line. Pydantic validation at load is unchanged; templates still resolve as before (see
:class:`Section` for the bounds).
"""

import types
import typing
from collections.abc import Iterator
from typing import Any

import dagster as dg
from pydantic import BaseModel, ConfigDict

#: Strings the YAML may hold in place of a value of another type: Jinja templates.
TEMPLATE = {
    "type": "string",
    "pattern": r"\{\{|\{%",
    "description": "a template, e.g. '{{ env.MY_VAR }}', resolved when the definitions load",
}
_ANY_STRING = {"type": "string"}
_NULL = {"type": "null"}


def models_in(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every pydantic model reachable from ``root``'s fields, by the name Dagster's derived
    schema gives it (``<Class>Model``)."""
    found: dict[str, type[BaseModel]] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            name = f"{tp.__name__}Model"
            if name in found:
                return
            found[name] = tp
            for field in tp.model_fields.values():
                visit(field.annotation)
                for meta in field.metadata:  # a dg.Resolver's model: the section it derives from
                    visit(getattr(getattr(meta, "model_field_type", None), "__rl_section__", None))
            return
        for arg in typing.get_args(tp):
            visit(arg)

    visit(root)
    return found


def _takes_strings(annotation: Any) -> bool:
    """True when the field itself is typed to take a string (then ``string`` is no escape hatch)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_takes_strings(arg) for arg in typing.get_args(annotation))
    return False


def _exactly(branches: list[dict[str, Any]]) -> dict[str, Any]:
    """The schema of ``branches`` (minus the escape hatch); ``null`` split off with if/else so
    errors inside the other branch keep their own path."""
    others = [b for b in branches if b != _NULL]
    body: dict[str, Any] = others[0] if len(others) == 1 else {"anyOf": others}
    if len(others) < len(branches):
        return {"if": _NULL, "then": True, "else": body}
    return body


def _has_ref(branch: dict[str, Any]) -> bool:
    return "$ref" in branch or "$ref" in branch.get("items", {})


def _tighten(prop: dict[str, Any]) -> None:
    branches = prop.get("anyOf")
    if not branches or _ANY_STRING not in branches or len(branches) < 2:
        return
    declared = [b for b in branches if b != _ANY_STRING]
    del prop["anyOf"]
    prop.update({"if": TEMPLATE, "then": True, "else": _exactly(declared)})
    if any(_has_ref(b) for b in declared):
        # For readers of the schema only (`dg utils inspect-component --defs-yaml-schema`
        # expands a section through anyOf): the trailing {} makes it always valid, so the
        # if/else above alone decides, and reports errors at their own paths.
        prop["anyOf"] = [*declared, {}]


def _objects(
    schema: dict[str, Any], root: type[BaseModel]
) -> Iterator[tuple[dict[str, Any], type[BaseModel]]]:
    models = models_in(root)
    yield schema, root
    for name, definition in schema.get("$defs", {}).items():
        if name in models:
            yield definition, models[name]


def exact_schema(schema: dict[str, Any], root: type[BaseModel]) -> dict[str, Any]:
    """``schema`` (Dagster's derived schema of ``root``) with descriptions restored and the
    string escape hatch narrowed to templates. Mutates and returns ``schema``."""
    for obj, model in _objects(schema, root):
        for name, prop in obj.get("properties", {}).items():
            field = model.model_fields.get(name)
            if field is None:
                continue
            if field.description and not prop.get("description"):
                prop["description"] = field.description
            if not _takes_strings(field.annotation):
                _tighten(prop)
    return schema


def undescribed(schema: dict[str, Any]) -> list[str]:
    """``Section.field`` for every property of ``schema`` without a description (for tests)."""
    missing = []
    objects = [("(top)", schema), *schema.get("$defs", {}).items()]
    for owner, obj in objects:
        for name, prop in obj.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{owner}.{name}")
    return missing


def templatable(derived: type[BaseModel]) -> type[BaseModel]:
    """``derived`` with bounds (``ge``, ``le``, ``min_length``...) kept only on the declared type.

    Dagster's derived field is ``Annotated[int, Ge(1)] | str`` *and* carries ``Ge(1)`` itself,
    so a template string (``"{{ env.X or 30 }}"``) hits ``>=`` and fails the load with a
    ``TypeError``. Dropping the field-level copy leaves the bound on the ``int`` branch, where
    YAML numbers are checked; the template's value is checked by the section's own model when
    it resolves. Mutates ``derived`` once."""
    if getattr(derived, "__rl_templatable__", False):
        return derived
    changed = False
    for field in derived.model_fields.values():
        if field.metadata and str in typing.get_args(field.annotation):
            field.metadata = []
            changed = True
    if changed:
        derived.model_rebuild(force=True)
    setattr(derived, "__rl_templatable__", True)  # noqa: B010 - pydantic class attribute
    return derived


class Section(dg.Model, dg.Resolvable):
    """Base of the Component's YAML sections: Dagster's model of it takes templates in place
    of bounded numbers (see :func:`templatable`)."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model(cls) -> type[BaseModel]:
        return templatable(super().model())


_EXACT: dict[type[BaseModel], type[BaseModel]] = {}


def exact_model(derived: type[BaseModel], root: type[BaseModel]) -> type[BaseModel]:
    """``derived`` (Dagster's model of ``root``) whose ``model_json_schema`` is
    :func:`exact_schema`'s; validation is inherited unchanged."""
    if derived not in _EXACT:

        def model_json_schema(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
            base = derived.model_json_schema.__func__  # type: ignore[attr-defined]
            return exact_schema(base(cls, *args, **kwargs), root)

        exact = type(
            derived.__name__, (derived,), {"model_json_schema": classmethod(model_json_schema)}
        )
        _EXACT[derived] = exact
    return _EXACT[derived]
