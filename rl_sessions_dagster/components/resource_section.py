"""The ``resource:`` section of ``TogetherRLComponent``, derived from
:class:`~rl_sessions_dagster.TogetherRLResource`'s own fields (a field added there is in the
YAML with nothing to copy). A secret is named by the environment variable holding it
(``<field>_env``) and becomes a ``dg.EnvVar``: read at run and tick time, never in YAML."""

from typing import Any

import dagster as dg
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from ..resource import TogetherRLResource
from .schema import Section

__all__ = ["ResourceSection", "resolve_resource"]

#: Bounds ``dg check yaml`` checks (the resource takes any value of each type).
_BOUNDS: dict[str, dict[str, Any]] = {
    "request_timeout": {"gt": 0, "le": 600},
    "max_attempts": {"ge": 1, "le": 20},
    "backoff_initial": {"ge": 0, "le": 600},
    "backoff_max": {"ge": 0, "le": 3600},
    "backoff_jitter": {"ge": 0, "le": 600},
    "retry_after_cap": {"ge": 0, "le": 3600},
    "call_deadline": {"gt": 0, "le": 86_400},
}
#: The environment variable each secret is read from when the YAML does not name one.
_SECRET_ENV: dict[str, str | None] = {"api_key": "TOGETHER_API_KEY", "database_url": None}


def _is_secret(info: FieldInfo) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("dagster__is_secret"))


class _ResourceSectionBase(Section):
    """:class:`~rl_sessions_dagster.TogetherRLResource` in YAML; secrets by environment
    variable (``api_key_env``, ``database_url_env``), read at run and tick time."""

    def build(self) -> TogetherRLResource:
        values: dict[str, Any] = {}
        for name, info in TogetherRLResource.model_fields.items():
            if _is_secret(info):
                env = getattr(self, f"{name}_env")
                values[name] = dg.EnvVar(env) if env else None
            else:
                values[name] = getattr(self, name)
        return TogetherRLResource(**values)


def _derived_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, info in TogetherRLResource.model_fields.items():
        if _is_secret(info):
            fields[f"{name}_env"] = (
                str | None,
                Field(
                    default=_SECRET_ENV.get(name),
                    min_length=1,
                    description=f"Environment variable holding {name}, read at run and tick "
                    f"time (the value never goes in YAML). {info.description or ''}".strip(),
                ),
            )
        else:
            fields[name] = (
                info.annotation,
                Field(default=info.default, description=info.description, **_BOUNDS.get(name, {})),
            )
    return fields


ResourceSection = create_model(
    "ResourceSection",
    __base__=_ResourceSectionBase,
    __module__=__name__,
    **_derived_fields(),
)


def resolve_resource(context: dg.ResolutionContext, model: BaseModel) -> TogetherRLResource:
    """The one resolver of ``resource:``: the YAML (templates resolved) → the resource."""
    return ResourceSection.resolve_from_model(context, model).build()
