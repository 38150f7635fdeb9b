"""Two fixes to the models Dagster derives from the Component's sections, both needed by
``dg check yaml`` (tests/components/test_bad_yaml_dg.py) and ``dg utils inspect-component``.

Dagster derives each section's model from its pydantic fields but, in 1.13, (1) drops each
field's ``description`` (the derived field's own ``description=None`` wins the merge), and (2)
lets every non-string field also take *any* string, so that ``{{ env.X }}`` templates pass.
The second makes each nested section an ``anyOf``: a misspelled key inside ``sessions:`` is
then reported as "``sessions`` is not valid under any of the given schemas", at the parent's
line and without the key; an unknown event kind or ``minimum_interval_seconds: abc`` passes.

:func:`exact` (applied by :meth:`Section.model`) gives each derived model a
``json_schema_extra`` hook that puts the descriptions back and replaces such an ``anyOf`` by "a
template string, or else exactly the declared type" (``if``/``else``): ``jsonschema`` then
reports the innermost error at its own path, so ``dg check yaml`` names the misspelled key,
the unknown kind or the out-of-bounds number at its line. It also keeps bounds only on the
declared type, so a template is checked when it resolves (see :func:`exact`). Validation at
load is Dagster's, unchanged.
"""

import types
import typing
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


def _exact_schema(schema: dict[str, Any], section: type[BaseModel]) -> None:
    """The ``json_schema_extra`` hook of a derived model: ``schema`` (its object schema) with
    the section's descriptions restored and the string escape hatch narrowed to templates."""
    for name, prop in schema.get("properties", {}).items():
        field = section.model_fields.get(name)
        if field is None:
            continue
        if field.description and not prop.get("description"):
            prop["description"] = field.description
        if not _takes_strings(field.annotation):
            _tighten(prop)


def undescribed(schema: dict[str, Any]) -> list[str]:
    """``Section.field`` for every property of ``schema`` without a description (for tests)."""
    missing = []
    objects = [("(top)", schema), *schema.get("$defs", {}).items()]
    for owner, obj in objects:
        for name, prop in obj.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{owner}.{name}")
    return missing


def exact(derived: type[BaseModel], section: type[BaseModel]) -> type[BaseModel]:
    """``derived`` (Dagster's model of ``section``) with its JSON schema made exact
    (:func:`_exact_schema`) and bounds (``ge``, ``le``, ``min_length``...) kept only on the
    declared type.

    Dagster's derived field is ``Annotated[int, Ge(1)] | str`` *and* carries ``Ge(1)`` itself,
    so a template string (``"{{ env.X or 30 }}"``) hits ``>=`` and fails the load with a
    ``TypeError``. Dropping the field-level copy leaves the bound on the ``int`` branch, where
    YAML numbers are checked; the template's value is checked by the section's own model when
    it resolves. Mutates ``derived`` once."""
    if getattr(derived, "__rl_exact__", False):
        return derived
    for field in derived.model_fields.values():
        if field.metadata and str in typing.get_args(field.annotation):
            field.metadata = []

    def hook(schema: dict[str, Any], cls: type[Any] | None = None) -> None:
        _exact_schema(schema, section)

    derived.model_config = {**derived.model_config, "json_schema_extra": hook}
    derived.model_rebuild(force=True)
    setattr(derived, "__rl_exact__", True)  # noqa: B010 - pydantic class attribute
    return derived


class Section(dg.Model, dg.Resolvable):
    """Base of the Component's YAML sections: Dagster's model of it takes templates in place
    of bounded numbers, and its schema is exact (see :func:`exact`)."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model(cls) -> type[BaseModel]:
        return exact(super().model(), cls)
