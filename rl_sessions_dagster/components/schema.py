"""Dagster 1.13's section model drops field descriptions and lets any field be a string (for
``{{ env.X }}`` templates), so errors show at the parent's line; :func:`exact` narrows that."""

import types
import typing
from typing import Any, ClassVar

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

#: Keys a YAML user plausibly writes in the wrong section, and where each belongs.
HOME: dict[str, str] = {
    **dict.fromkeys(("dataset", "items", "prompt_template", "graders", "tolerance"), "evaluation"),
    **dict.fromkeys(("metric", "direction", "min_candidates", "on_change"), "champion"),
    **dict.fromkeys(("idle_seconds", "dry_run"), "idle_guard"),
    **dict.fromkeys(("api_key_env", "database_url_env", "base_url"), "resource"),
    **dict.fromkeys(
        [
            "resource",
            "sessions",
            "sync",
            "model_resources",
            "idle_guard",
            "spend",
            "evaluation",
            "report",
            "champion",
            "checkpoint_asset",
            "resource_key",
        ],
        "attributes",
    ),
}
_FIELD = r"(?:\*|{v}(?:-{v})?)(?:/[0-9]+)?"
_CRON_FIELDS = (
    r"[1-5]?[0-9]",
    r"(?:[01]?[0-9]|2[0-3])",
    r"(?:0?[1-9]|[12][0-9]|3[01])",
    r"(?:0?[1-9]|1[0-2]|[A-Za-z]{3})",
    r"(?:[0-7]|[A-Za-z]{3})",
)
#: Five cron fields in their ranges (or @hourly, @daily, ...), checked at the field's line.
CRON_PATTERN = (
    "^(?:@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)|"
    + " +".join(f"{_FIELD.format(v=v)}(?:,{_FIELD.format(v=v)})*" for v in _CRON_FIELDS)
    + ")$"
)
CRON_HELP = (
    "a cron string: minute (0-59) hour (0-23) day (1-31) month (1-12) weekday (0-7), each *, "
    "a value, a range or a list, with an optional /step; or @hourly, @daily, @weekly, @monthly, "
    "@yearly"
)
CRON = {"if": {"pattern": CRON_PATTERN}, "then": True, "else": {"const": CRON_HELP}}


def _takes_strings(annotation: Any) -> bool:
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_takes_strings(arg) for arg in typing.get_args(annotation))
    return False


def _tighten(prop: dict[str, Any]) -> None:
    """``anyOf: [declared, string]`` → if template then valid else declared (``null`` likewise)."""
    branches = prop.get("anyOf")
    if not branches or _ANY_STRING not in branches or len(branches) < 2:
        return
    declared = [b for b in prop.pop("anyOf") if b != _ANY_STRING]
    others = [b for b in declared if b != _NULL]
    body: dict[str, Any] = others[0] if len(others) == 1 else {"anyOf": others}
    if len(others) < len(declared):
        body = {"if": _NULL, "then": True, "else": body}
    prop.update({"if": TEMPLATE, "then": True, "else": body})
    if any("$ref" in b or "$ref" in b.get("items", {}) for b in declared):
        # for `dg utils inspect-component`, which expands sections via anyOf; {} always passes
        prop["anyOf"] = [*declared, {}]


def exact(derived: type[BaseModel], section: type[BaseModel]) -> type[BaseModel]:
    """Dagster's model of ``section`` with descriptions back, the string escape narrowed to
    templates, no bounds on it (a template hits ``>=``: checked when the section resolves)."""
    if getattr(derived, "__rl_exact__", False):
        return derived
    for field in derived.model_fields.values():
        if field.metadata and str in typing.get_args(field.annotation):
            field.metadata = []

    top = issubclass(section, dg.Component)

    def hook(schema: dict[str, Any]) -> None:
        for name, prop in schema.get("properties", {}).items():
            field = section.model_fields.get(name)
            if field is None:
                continue
            if field.description and not prop.get("description"):
                prop["description"] = field.description
            if not _takes_strings(field.annotation):
                _tighten(prop)
            if name == "cron_schedule":
                prop["allOf"] = [{"if": TEMPLATE, "then": True, "else": CRON}]
            prop.update(getattr(section, "schema_overrides", {}).get(name, {}))
        if across := getattr(section, "schema_all_of", ()):
            schema.setdefault("allOf", []).extend(across)
        # dependentSchemas: no fields, the hint beside "'x' was unexpected", the value not echoed
        refused: dict[str, Any] = {
            name: {"const": f"'{name}' belongs under '{home}'"}
            for name, home in HOME.items()
            if name not in section.model_fields and not (top and home == "attributes")
        }
        refused |= {name: {"const": text} for name, text in getattr(section, "refused", {}).items()}
        if refused:
            schema["dependentSchemas"] = {
                name: {"properties": {name: rule}} for name, rule in refused.items()
            }

    derived.model_config = {**derived.model_config, "json_schema_extra": hook}
    derived.model_rebuild(force=True)
    setattr(derived, "__rl_exact__", True)  # noqa: B010 - pydantic class attribute
    return derived


class Section(dg.Model, dg.Resolvable):
    """Base of the Component's YAML sections."""

    model_config = ConfigDict(defer_build=True)
    #: Keys refused in the YAML, each with what to write instead.
    refused: ClassVar[dict[str, str]] = {}
    #: JSON schema put over a field's derived one (what ``dg check yaml`` checks beyond its type).
    schema_overrides: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def model(cls) -> type[BaseModel]:
        return exact(super().model(), cls)
