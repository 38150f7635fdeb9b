"""The typed, frozen inputs of every sensor builder, checked when built (a mistake fails at
definitions load). Each knob is spelled once, here; the Component's YAML copies these fields."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, TypeVar

import dagster as dg
from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.dataclasses import dataclass as options_dataclass

from ..core.events import (
    CHECKPOINT_EVENTS,
    EventKind,
    ResourceEvent,
    ResourceEventKind,
    SessionEvent,
    TrackerConfig,
)
from ..core.resources import ResourceTrackerConfig
from ..partitions import (
    CHAMPION_ASSET_KEY,
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    EVALUATION_ASSET_KEY,
    Assets,
    Job,
)

DEFAULT_TICK_BUDGET_SECONDS = 40.0
K = TypeVar("K", bound=Enum)

#: Reshape the default RunRequest of an event (run config, extra tags), or drop it (None).
RunRequestFn = Callable[[SessionEvent, dg.RunRequest], dg.RunRequest | None]
ResourceRunRequestFn = Callable[[ResourceEvent, dg.RunRequest], dg.RunRequest | None]


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


#: A count or a duration: a number, never a boolean (which Python would take for 0 or 1).
Count = Annotated[int, BeforeValidator(_not_bool)]
Seconds = Annotated[float, BeforeValidator(_not_bool)]

_CONFIG = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


class _Checked:
    """A mistake is a definition error naming the field, as for other Dagster definitions."""

    @model_validator(mode="wrap")
    @classmethod
    def _definition_error(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(options)'}: {e['msg']}, "
                f"got {e.get('input')!r}"
                for e in exc.errors()
            )
            raise dg.DagsterInvalidDefinitionError(f"{cls.__name__}: {problems}") from None


_MAX_RUNS: Any = Field(
    default=25,
    ge=1,
    le=1000,
    description="Most events a tick turns into runs; the rest follow next tick, in order.",
)
_SPEND_DB_PATH: Any = Field(
    default=None,
    description="Where the spend asset keeps its tables, when not where the resource's "
    "database_url puts every table (the default).",
)


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class TickOptions(_Checked):
    """What every API-reading sensor's tick takes."""

    resource_key: str = Field(
        default="together",
        min_length=1,
        description="Key of the TogetherRLResource in Definitions.",
    )
    tick_budget_seconds: Seconds = Field(
        default=DEFAULT_TICK_BUDGET_SECONDS,
        gt=0,
        le=3600,
        description="Wall time a tick may spend on the API, retries included (kept 15 s under "
        "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS); unread work is left for the next tick.",
    )
    unavailable_alarm_seconds: Seconds = Field(
        default=600.0,
        gt=0,
        description="After this long of every tick failing transiently (5xx, timeouts), one tick "
        "fails loudly and the sensor keeps retrying; bad config (key, DNS, TLS) fails every tick.",
    )


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class PollingOptions(TickOptions):
    """How a session-event sensor reads the API and what it records."""

    checkpoint_asset_key: dg.AssetKey | None = Field(
        default=CHECKPOINT_ASSET_KEY,
        description="Record a runless materialization of this asset (partitioned by "
        "CHECKPOINT_PARTITIONS) per checkpoint event; None to disable.",
    )
    backfill: bool = Field(
        default=False,
        description="On the first tick, announce history too (default: only what happens next).",
    )
    max_runs_per_tick: Count = _MAX_RUNS
    lookback_seconds: Seconds = Field(
        default=600.0,
        gt=0,
        description="How far behind the newest session seen the finished-session scan reaches "
        "(covers clock and visibility lag).",
    )
    registration_wait_seconds: Seconds = Field(
        default=3600.0, gt=0, description="How long an unregistered checkpoint is re-checked."
    )
    page_size: Count = Field(default=100, ge=1, le=100, description="List page size (1-100).")
    unordered_pages_per_tick: Count = Field(
        default=8,
        ge=1,
        le=1000,
        description="When the finished-session list has no time order, the pages of it a tick "
        "reads (a session born and ended between ticks is reported within "
        "2 * ceil(pages / unordered_pages_per_tick) + 1 ticks).",
    )

    def tracker_config(self, kinds: frozenset[EventKind]) -> TrackerConfig:
        return TrackerConfig(
            kinds=kinds,
            max_events=self.max_runs_per_tick,
            lookback_ms=int(self.lookback_seconds * 1000),
            registration_wait_ms=int(self.registration_wait_seconds * 1000),
            backfill=self.backfill,
            unordered_pages_per_tick=self.unordered_pages_per_tick,
        )


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class ResourceSensorOptions(TickOptions):
    """How the model-resource sensor reads and announces."""

    expiring_lead_seconds: Seconds = Field(
        default=600.0,
        ge=0,
        description="resource_expiring fires when a READY resource's expires_at is this close "
        "(once per deadline; activity moves the deadline).",
    )
    queued_long_seconds: Seconds = Field(
        default=1800.0,
        ge=0,
        description="resource_queued_long fires once a resource has been PENDING this long "
        "(tagged with its queue_position).",
    )
    spend_db_path: str | None = _SPEND_DB_PATH
    max_runs_per_tick: Count = _MAX_RUNS
    lookback_seconds: Seconds = Field(
        default=600.0,
        ge=0,
        description="How far back a resource that ended between ticks is still reported.",
    )

    def tracker_config(self, kinds: frozenset[ResourceEventKind]) -> ResourceTrackerConfig:
        return ResourceTrackerConfig(
            kinds=kinds,
            max_events=self.max_runs_per_tick,
            expiring_lead_ms=int(self.expiring_lead_seconds * 1000),
            queued_long_ms=int(self.queued_long_seconds * 1000),
            lookback_ms=int(self.lookback_seconds * 1000),
        )


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class IdleGuardOptions(TickOptions):
    """How the idle guard ticks and retries; what it may stop is its ``IdlePolicy``."""

    stop_attempts: Count = Field(
        default=3,
        ge=1,
        le=20,
        description="Runs per idle stretch before the guard gives up (a failed run is "
        "requested again under a fresh run key).",
    )
    spend_db_path: str | None = _SPEND_DB_PATH


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class ChampionOptions(_Checked):
    """Which assets the champion sensor reads and writes, and how its run is shaped."""

    key: dg.AssetKey = Field(
        default=CHAMPION_ASSET_KEY, description="The champion asset (partitioned by sweep)."
    )
    evaluation_key: dg.AssetKey = Field(
        default=EVALUATION_ASSET_KEY,
        description="The evaluation asset whose materializations are folded in.",
    )
    checkpoint_asset_key: dg.AssetKey = Field(
        default=CHECKPOINT_ASSET_KEY,
        description="The checkpoint asset whose metadata names each sweep.",
    )
    job_name: str = Field(
        default="together_rl_champion_changed",
        min_length=1,
        description="Name of the asset job made when build_champion_definitions is given assets.",
    )
    partitioned_job: bool = Field(
        default=False,
        description="Each champion_changed run carries the champion's checkpoint partition key "
        "(the target must use CHECKPOINT_PARTITIONS).",
    )
    group_name: str | None = Field(
        default="together_rl", description="Asset group of the champion asset."
    )


class UnknownEventKind(dg.DagsterInvalidDefinitionError, ValueError):
    """An unknown event kind name (also a ``ValueError``)."""


def parse_kinds(
    enum: type[K], kinds: Iterable[K | str], *, noun: str = "event kind"
) -> frozenset[K]:
    """The kinds of one enum; an unknown name (listing the valid ones) or none is refused."""
    parsed: set[K] = set()
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        try:
            parsed.add(enum(kind))
        except ValueError:
            valid = ", ".join(k.value for k in enum)
            raise UnknownEventKind(f"unknown {noun} {kind!r}; valid kinds: {valid}") from None
    if not parsed:
        raise dg.DagsterInvalidDefinitionError(f"event_kinds must name at least one {noun}")
    return frozenset(parsed)


def event_kinds(kinds: Iterable[EventKind | str]) -> frozenset[EventKind]:
    return parse_kinds(EventKind, kinds)


@dataclass(frozen=True)
class _Route:
    """What both families' routes share: exactly one target, the kinds parsed when built."""

    event_kinds: Iterable[Any]
    job: "Job | None" = None
    assets: "Assets | None" = None
    job_name: str | None = None

    def _set_kinds(self, kinds: frozenset[Any]) -> None:
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "event_kinds", kinds)  # normalised to the parsed set
        what = type(self).__name__
        if (self.job is None) == (self.assets is None):
            raise dg.DagsterInvalidDefinitionError(
                f"an {what} takes exactly one of job= and assets="
            )
        if self.job is not None and self.job_name is not None:
            raise dg.DagsterInvalidDefinitionError(
                f"{what}: job_name names the asset job made for assets=; a job has its name"
            )


@dataclass(frozen=True)
class EventRoute(_Route):
    """Event kinds to a job, or to assets run as the asset job ``job_name``. Checkpoint runs carry
    their partition key: the target is partitioned by ``partitions_def`` (None: unpartitioned)."""

    event_kinds: Iterable[EventKind | str]
    partitions_def: dg.DynamicPartitionsDefinition | None = field(default=CHECKPOINT_PARTITIONS)
    run_request_fn: RunRequestFn | None = None
    kinds: frozenset[EventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_kinds(event_kinds(self.event_kinds))
        if self.partitioned and not self.kinds <= CHECKPOINT_EVENTS:
            others = sorted(k.value for k in self.kinds - CHECKPOINT_EVENTS)
            raise dg.DagsterInvalidDefinitionError(
                f"a route partitioned by checkpoint cannot take {others}: those events have no "
                "checkpoint. Route them separately, or pass partitions_def=None."
            )

    @property
    def partitioned(self) -> bool:  # its runs carry a checkpoint partition key
        return self.partitions_def is not None and bool(self.kinds & CHECKPOINT_EVENTS)


@dataclass(frozen=True)
class ResourceRoute(_Route):
    """Which model-resource event kinds go to which target, as :class:`EventRoute` (unpartitioned)."""

    event_kinds: Iterable[ResourceEventKind | str]
    run_request_fn: ResourceRunRequestFn | None = None
    kinds: frozenset[ResourceEventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        noun = "model-resource event kind"
        self._set_kinds(parse_kinds(ResourceEventKind, self.event_kinds, noun=noun))
