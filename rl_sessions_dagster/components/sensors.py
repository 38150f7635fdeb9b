"""The Component's sensor sections, one shape for both event families, and the section helpers."""

import copy
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import dagster as dg
from pydantic import Field, create_model
from pydantic_core import PydanticUndefined

from ..core.events import CHECKPOINT_EVENTS, EventKind, ResourceEventKind, SessionFilter
from ..partitions import CHECKPOINT_PARTITIONS
from ..sensors import (
    EventRoute,
    PollingOptions,
    ResourceFilter,
    ResourceRoute,
    ResourceSensorOptions,
    build_model_resource_sensor,
    build_session_sensor,
)
from ..sensors.options import event_kinds
from .schema import Section


def copied_field(owner: Any, name: str) -> Any:
    """A pydantic dataclass's field as the class spells it; a set default reads as a list."""
    info = copy.copy(owner.__pydantic_fields__[name])
    if isinstance(info.default, frozenset):
        info.default, info.default_factory = PydanticUndefined, list
    return info


def options_section(options: Any, name: str, exclude: Collection[str]) -> type[Section]:
    """The YAML section of an options class: its fields minus the ones the Component sets."""
    fields: dict[str, Any] = {
        field: (info.annotation, copied_field(options, field))
        for field, info in options.__pydantic_fields__.items()
        if field not in exclude
    }
    doc = f":class:`~rl_sessions_dagster.{options.__name__}` in YAML."
    return create_model(name, __base__=Section, __module__=__name__, __doc__=doc, **fields)


#: The event kinds as YAML spells them: the enums' values, a ``Literal`` for the schema.
if TYPE_CHECKING:
    EventKindName: TypeAlias = str
    ResourceEventKindName: TypeAlias = str
else:
    EventKindName = Literal[tuple(k.value for k in EventKind)]
    ResourceEventKindName = Literal[tuple(k.value for k in ResourceEventKind)]


def interval_field(default: int = 30) -> Any:
    return Field(
        default=default, ge=1, le=86_400, description="Seconds between ticks (1 to 86400)."
    )


def running_field(default: bool = False, note: str = "") -> Any:
    return Field(default=default, description=f"Default status RUNNING (else STOPPED).{note}")


def sensor_knobs(section: Any) -> dict[str, Any]:
    """A section's ``minimum_interval_seconds`` and ``running`` as the sensor builders take them."""
    status = dg.DefaultSensorStatus.RUNNING if section.running else dg.DefaultSensorStatus.STOPPED
    return {"minimum_interval_seconds": section.minimum_interval_seconds, "default_status": status}


def schedule_status(running: bool) -> dg.DefaultScheduleStatus:
    return dg.DefaultScheduleStatus.RUNNING if running else dg.DefaultScheduleStatus.STOPPED


def section_route(section: str, config: Any, existing: Sequence[EventRoute]) -> list[EventRoute]:
    """A section's route to the session sensor; refused when ``sessions.routes:`` has its kinds."""
    if not config.route:
        return []
    wanted = event_kinds(config.event_kinds)
    taken = sorted(k.value for r in existing for k in r.kinds & wanted)
    if taken:
        raise ValueError(
            f"{section}: {', '.join(taken)} {'is' if len(taken) == 1 else 'are'} already routed "
            f"under sessions.routes:; remove that route or set {section}.route: false"
        )
    selection = dg.AssetSelection.assets(dg.AssetKey.from_user_string(config.key))
    return [EventRoute(wanted, assets=selection, job_name=config.job_name)]


def _name_field(default: Any = ...) -> Any:
    return Field(
        default,
        min_length=1,
        description="Sensor name; also the key of its cursor (renaming starts over).",
    )


class SensorSection(Section):
    """What every sensor section has: on/off, name, interval, default status."""

    enabled: bool = Field(default=True, description="false: no sensor.")
    name: str = _name_field()
    minimum_interval_seconds: int = interval_field()
    running: bool = running_field()


class RouteConfig(Section):
    """Which session event kinds run which assets (a Dagster asset selection string)."""

    event_kinds: list[EventKindName] = Field(
        min_length=1, description="Session event kinds this route runs; each in one route at most."
    )
    assets: str = Field(
        min_length=1, description="Asset selection, e.g. 'key:\"checkpoint_evaluation\"'."
    )
    job_name: str = Field(min_length=1, description="Name of the asset job the runs execute.")
    partitioned: bool | None = Field(
        default=None,
        description="Runs carry the checkpoint partition key, for assets on CHECKPOINT_PARTITIONS "
        "(default: when every kind is a checkpoint kind).",
    )

    def route(self) -> EventRoute:
        kinds = event_kinds(self.event_kinds)
        partitioned = kinds <= CHECKPOINT_EVENTS if self.partitioned is None else self.partitioned
        return EventRoute(
            kinds,
            assets=dg.AssetSelection.from_string(self.assets),
            job_name=self.job_name,
            partitions_def=CHECKPOINT_PARTITIONS if partitioned else None,
        )


class SessionFilterConfig(Section):
    """Which sessions the sensor watches; every given field must match."""

    model_resources_id: str | None = Field(
        default=None, description="Only sessions on this model resource (sent to the API)."
    )
    created_by: str | None = Field(default=None, description='"me" or a user id.')
    display_name: str | None = Field(default=None, description='A glob, e.g. "sweep-*".')
    wandb_project: str | None = Field(
        default=None, description="Only sessions logging to this W&B project."
    )
    wandb_group: str | None = Field(
        default=None, description="Only sessions in this W&B group (a sweep)."
    )


PollingConfig = options_section(
    PollingOptions, "PollingConfig", {"resource_key", "checkpoint_asset_key"}
)


class SessionSensorSection(SensorSection):
    """The session-event sensor: one API poll per interval, each event kind to its selection."""

    name: str = _name_field("together_rl_events")
    filter: SessionFilterConfig = Field(
        default_factory=SessionFilterConfig, description="Which sessions the sensor watches."
    )
    options: PollingConfig = Field(  # type: ignore[valid-type] # a derived model
        default_factory=PollingConfig, description="How the sensor reads the API (PollingOptions)."
    )
    announce: list[Literal["checkpoint_registered", "checkpoint_created"]] = Field(
        default_factory=list,
        description="Checkpoint kinds whose partition and runless materialization are recorded "
        "even with no route, for AutomationCondition.eager() assets.",
    )
    routes: list[RouteConfig] = Field(
        default_factory=list,
        description="Which session event kinds run which assets (evaluation: and report: add "
        "their own).",
    )

    def build(
        self, resource_key: str, checkpoint_asset_key: dg.AssetKey | None, routes: list[EventRoute]
    ) -> dg.Definitions:
        """The sensor of ``routes`` (this section's and the others'); none with nothing to do."""
        if not self.enabled or (not routes and not self.announce):
            return dg.Definitions()
        sensor = build_session_sensor(
            name=self.name,
            routes=routes,
            session_filter=SessionFilter(**self.filter.model_dump()),
            options=PollingOptions(
                resource_key=resource_key,
                checkpoint_asset_key=checkpoint_asset_key,
                **Section.model_dump(self.options),
            ),
            announce=self.announce,
            **sensor_knobs(self),
        )
        return dg.Definitions(sensors=[sensor])


class ResourceRouteConfig(Section):
    """Which model-resource event kinds run which assets (a Dagster asset selection string)."""

    event_kinds: list[ResourceEventKindName] = Field(
        min_length=1, description="Resource event kinds this route runs; each in one route at most."
    )
    assets: str = Field(min_length=1, description="Asset selection, e.g. 'key:\"gpu_notices\"'.")
    job_name: str = Field(min_length=1, description="Name of the asset job the runs execute.")


class ResourceFilterConfig(Section):
    """Which model resources the sensor watches; every given field must match."""

    created_by: str | None = Field(default=None, description='"me" or a user id.')
    base_model: str | None = Field(default=None, description="Only resources of this base model.")


ResourceOptionsConfig = options_section(
    ResourceSensorOptions, "ResourceOptionsConfig", {"resource_key", "spend_db_path"}
)


class ResourceSensorSection(SensorSection):
    """The model-resource sensor: one poll of the list per interval, each kind to its selection."""

    name: str = _name_field("together_rl_resource_events")
    filter: ResourceFilterConfig = Field(
        default_factory=ResourceFilterConfig,
        description="Which model resources the sensor watches.",
    )
    options: ResourceOptionsConfig = Field(  # type: ignore[valid-type] # a derived model
        default_factory=ResourceOptionsConfig,
        description="Thresholds and tick knobs (ResourceSensorOptions).",
    )
    routes: list[ResourceRouteConfig] = Field(
        default_factory=list,
        description="Which model-resource event kinds run which assets (none: no sensor).",
    )

    def build(self, resource_key: str, spend_db_path: str | None) -> dg.Definitions:
        if not self.routes:
            return dg.Definitions()
        routes = [
            ResourceRoute(
                r.event_kinds, assets=dg.AssetSelection.from_string(r.assets), job_name=r.job_name
            )
            for r in self.routes
        ]
        sensor = build_model_resource_sensor(
            name=self.name,
            routes=routes,
            resource_filter=ResourceFilter(**self.filter.model_dump()),
            options=ResourceSensorOptions(
                resource_key=resource_key,
                spend_db_path=spend_db_path,
                **Section.model_dump(self.options),
            ),
            **sensor_knobs(self),
        )
        return dg.Definitions(sensors=[sensor])
