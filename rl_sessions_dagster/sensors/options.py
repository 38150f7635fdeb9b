"""The typed, frozen inputs of every sensor builder, checked when built so a mistake fails at
definitions load, not at the first event.

Every builder takes the same shape: the sensor's identity (``name``,
``minimum_interval_seconds``, ``default_status``, ``description``), where its runs go (``routes``
of :class:`EventRoute` / :class:`ResourceRoute`, or the champion's ``job``/``assets``), what it
watches (a filter, policy or rule) and one options object holding the rarely changed knobs:
:class:`PollingOptions` (session events), :class:`ResourceSensorOptions` (model-resource
events), :class:`IdleGuardOptions` (the idle guard), :class:`ChampionOptions` (the champion).

Each knob is spelled once, here: its type, default, bounds and description. The Component's
YAML sections are derived from these fields (``components/sensors.py``), so ``dg check yaml``
checks the same bounds and ``dg utils inspect-component`` shows the same descriptions.
"""

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
    TrackerConfig,
)
from ..core.resources import ResourceTrackerConfig
from ..partitions import CHECKPOINT_ASSET_KEY, CHECKPOINT_PARTITIONS
from ..partitions.jobs import Assets, Job
from ..partitions.sweeps import CHAMPION_ASSET_KEY, EVALUATION_ASSET_KEY
from .run_requests import RunRequestFn

DEFAULT_TICK_BUDGET_SECONDS = 40.0
#: Runs per idle stretch of one resource before the guard gives up on it (the first + retries).
DEFAULT_STOP_ATTEMPTS = 3
K = TypeVar("K", bound=Enum)

#: Reshape the default RunRequest of a model-resource event, or drop it (return None).
ResourceRunRequestFn = Callable[[ResourceEvent, dg.RunRequest], dg.RunRequest | None]


def _invalid(message: str) -> dg.DagsterInvalidDefinitionError:
    return dg.DagsterInvalidDefinitionError(message)


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


#: A count or a duration: a number, never a boolean (which Python would take for 0 or 1).
Count = Annotated[int, BeforeValidator(_not_bool)]
Seconds = Annotated[float, BeforeValidator(_not_bool)]

_CONFIG = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


class _Checked:
    """A mistake in an options object is a definition error naming the field, as Dagster
    raises for other definitions (a pydantic ``ValidationError`` otherwise)."""

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
            raise _invalid(f"{cls.__name__}: {problems}") from None


def _resource_key() -> Any:
    return Field(
        default="together",
        min_length=1,
        description="Key of the TogetherRLResource in Definitions.",
    )


def _tick_budget() -> Any:
    return Field(
        default=DEFAULT_TICK_BUDGET_SECONDS,
        gt=0,
        le=3600,
        description="Wall time a tick may spend on the API, retries included (kept 15 s under "
        "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS); unread work is left for the next tick.",
    )


def _max_runs() -> Any:
    return Field(
        default=25,
        ge=1,
        le=1000,
        description="Most events a tick turns into runs; the rest follow next tick, in order.",
    )


def _alarm() -> Any:
    return Field(
        default=600.0,
        gt=0,
        description="After this long with every tick failing to read the API (5xx, timeouts, "
        "connection errors), one tick fails loudly (red in the UI); the sensor keeps "
        "retrying. Configuration errors (key, DNS, TLS) fail every tick.",
    )


def _spend_db_path() -> Any:
    return Field(
        default=None,
        description="Where the spend asset keeps its tables, when not where the resource's "
        "database_url puts every table (the default).",
    )


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class PollingOptions(_Checked):
    """How a session-event sensor reads the API and what it records. One object, shared by
    every route of the sensor."""

    resource_key: str = _resource_key()
    checkpoint_asset_key: dg.AssetKey | None = Field(
        default=CHECKPOINT_ASSET_KEY,
        description="Record a runless materialization of this asset (partitioned by "
        "CHECKPOINT_PARTITIONS) per checkpoint event; None to disable.",
    )
    backfill: bool = Field(
        default=False,
        description="On the first tick, announce history too (default: only what happens next).",
    )
    max_runs_per_tick: Count = _max_runs()
    tick_budget_seconds: Seconds = _tick_budget()
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
    unavailable_alarm_seconds: Seconds = _alarm()
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
class ResourceSensorOptions(_Checked):
    """How the model-resource sensor reads and announces, checked when built."""

    resource_key: str = _resource_key()
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
    spend_db_path: str | None = _spend_db_path()
    max_runs_per_tick: Count = _max_runs()
    tick_budget_seconds: Seconds = _tick_budget()
    lookback_seconds: Seconds = Field(
        default=600.0,
        ge=0,
        description="How far back a resource that ended between ticks is still reported.",
    )
    unavailable_alarm_seconds: Seconds = _alarm()

    def tracker_config(self, kinds: frozenset[ResourceEventKind]) -> ResourceTrackerConfig:
        return ResourceTrackerConfig(
            kinds=kinds,
            max_events=self.max_runs_per_tick,
            expiring_lead_ms=int(self.expiring_lead_seconds * 1000),
            queued_long_ms=int(self.queued_long_seconds * 1000),
            lookback_ms=int(self.lookback_seconds * 1000),
        )


@options_dataclass(frozen=True, kw_only=True, config=_CONFIG)
class IdleGuardOptions(_Checked):
    """How the idle guard ticks and retries; what it may stop is its ``IdlePolicy``."""

    resource_key: str = _resource_key()
    stop_attempts: Count = Field(
        default=DEFAULT_STOP_ATTEMPTS,
        ge=1,
        le=20,
        description="Runs per idle stretch before the guard gives up (a failed run is "
        "requested again under a fresh run key).",
    )
    spend_db_path: str | None = _spend_db_path()
    tick_budget_seconds: Seconds = _tick_budget()
    unavailable_alarm_seconds: Seconds = _alarm()


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
    """An event kind name this library does not know. Also a ``ValueError``, which is what
    0.1 raised for it, so code that caught that keeps working."""


def parse_kinds(
    enum: type[K], kinds: Iterable[K | str], *, noun: str = "event kind"
) -> frozenset[K]:
    """Parse the kinds of one enum (session or model-resource events): an unknown name raises
    :class:`UnknownEventKind` listing the valid ones, an empty list is refused."""
    parsed: set[K] = set()
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        try:
            parsed.add(enum(kind))
        except ValueError:
            valid = ", ".join(k.value for k in enum)
            raise UnknownEventKind(f"unknown {noun} {kind!r}; valid kinds: {valid}") from None
    if not parsed:
        raise _invalid(f"event_kinds must name at least one {noun}")
    return frozenset(parsed)


def event_kinds(kinds: Iterable[EventKind | str]) -> frozenset[EventKind]:
    """Parse session and checkpoint event kinds (see :func:`parse_kinds`)."""
    return parse_kinds(EventKind, kinds)


def resource_event_kinds(kinds: Iterable[ResourceEventKind | str]) -> frozenset[ResourceEventKind]:
    """Parse model-resource event kinds (see :func:`parse_kinds`)."""
    return parse_kinds(ResourceEventKind, kinds, noun="model-resource event kind")


def _check_target(route: "EventRoute | ResourceRoute") -> None:
    """The one check of where a route's runs go, for both families."""
    what = type(route).__name__
    if (route.job is None) == (route.assets is None):
        raise _invalid(f"an {what} takes exactly one of job= and assets=")
    if route.job is not None and route.job_name is not None:
        raise _invalid(f"{what}: job_name names the asset job made for assets=; a job has its name")


@dataclass(frozen=True)
class EventRoute:
    """Which event kinds go to which target: a job, or an asset selection (run as an asset job
    named ``job_name``). Exactly one of ``job`` and ``assets``.

    ``partitions_def`` applies to checkpoint events: each run gets the checkpoint's partition
    key, and the target must be partitioned by it (checked at definitions load). Set it to
    ``None`` for unpartitioned checkpoint runs. A route that also takes session events (which
    have no checkpoint) cannot be partitioned. ``run_request_fn`` reshapes each run request
    (run config, tags) or drops it.
    """

    event_kinds: Iterable[EventKind | str]
    job: "Job | None" = None
    assets: "Assets | None" = None
    job_name: str | None = None
    partitions_def: dg.DynamicPartitionsDefinition | None = field(default=CHECKPOINT_PARTITIONS)
    run_request_fn: RunRequestFn | None = None
    #: The parsed ``event_kinds`` (which is normalised to the same set when built).
    kinds: frozenset[EventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", event_kinds(self.event_kinds))
        object.__setattr__(self, "event_kinds", self.kinds)
        _check_target(self)
        if self.partitioned and not self.kinds <= CHECKPOINT_EVENTS:
            others = sorted(k.value for k in self.kinds - CHECKPOINT_EVENTS)
            raise _invalid(
                f"a route partitioned by checkpoint cannot take {others}: those events have no "
                "checkpoint. Route them separately, or pass partitions_def=None."
            )

    @property
    def partitioned(self) -> bool:
        """True when this route's runs carry a checkpoint partition key."""
        return self.partitions_def is not None and bool(self.kinds & CHECKPOINT_EVENTS)


@dataclass(frozen=True)
class ResourceRoute:
    """Which model-resource event kinds go to which target: a job, or an asset selection (run
    as an asset job named ``job_name``). Exactly one of ``job`` and ``assets``; checked and
    resolved exactly as :class:`EventRoute` is. Its runs are not partitioned.
    ``run_request_fn`` reshapes each run request or drops it."""

    event_kinds: Iterable[ResourceEventKind | str]
    job: "Job | None" = None
    assets: "Assets | None" = None
    job_name: str | None = None
    run_request_fn: ResourceRunRequestFn | None = None
    #: The parsed ``event_kinds`` (which is normalised to the same set when built).
    kinds: frozenset[ResourceEventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", resource_event_kinds(self.event_kinds))
        object.__setattr__(self, "event_kinds", self.kinds)
        _check_target(self)

    @property
    def partitioned(self) -> bool:
        """Always False: a model-resource event has no checkpoint."""
        return False
