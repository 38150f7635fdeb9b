"""The typed, frozen inputs of every sensor builder, checked when built so a mistake fails at
definitions load, not at the first event.

Every builder takes the same shape: the sensor's identity (``name``,
``minimum_interval_seconds``, ``default_status``, ``description``), where its runs go (``routes``
of :class:`EventRoute` / :class:`ResourceRoute`, or one ``job``/``target``), what it watches (a
filter, policy or rule) and one options object holding the rarely changed knobs:
:class:`PollingOptions` (session events), :class:`ResourceSensorOptions` (model-resource
events), :class:`IdleGuardOptions` (the idle guard), :class:`ChampionOptions` (the champion).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

import dagster as dg

from ..core.events import CHECKPOINT_EVENTS, EventKind
from ..core.resource_events import ResourceEvent, ResourceEventKind
from ..core.resource_tracker import ResourceTrackerConfig
from ..core.tracker_io import TrackerConfig
from ..partitions import (
    CHAMPION_ASSET_KEY,
    CHECKPOINT_ASSET_KEY,
    CHECKPOINT_PARTITIONS,
    EVALUATION_ASSET_KEY,
)
from ..partitions.jobs import Assets, Job
from .run_requests import RunRequestFn

DEFAULT_TICK_BUDGET_SECONDS = 40.0
K = TypeVar("K", bound=Enum)

#: Reshape the default RunRequest of a model-resource event, or drop it (return None).
ResourceRunRequestFn = Callable[[ResourceEvent, dg.RunRequest], dg.RunRequest | None]


def _invalid(message: str) -> dg.DagsterInvalidDefinitionError:
    return dg.DagsterInvalidDefinitionError(message)


def _at_least_one(owner: object, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        if isinstance(value, bool) or not value >= 1:
            raise _invalid(f"{name} must be at least 1, got {value!r}")


def _positive(owner: object, *names: str) -> None:
    for name in names:
        if not getattr(owner, name) > 0:
            raise _invalid(f"{name} must be positive, got {getattr(owner, name)!r}")


def _resource_key(owner: object) -> None:
    key = getattr(owner, "resource_key")  # noqa: B009 - every options class has one
    if not isinstance(key, str) or not key:
        raise _invalid(f"resource_key must be a non-empty string, got {key!r}")


@dataclass(frozen=True, kw_only=True)
class PollingOptions:
    """How a session-event sensor reads the API and what it records. One object, shared by
    every route of the sensor.

    Attributes:
        resource_key: key of the :class:`~rl_sessions_dagster.TogetherRLResource` in
            ``Definitions``.
        checkpoint_asset_key: record a runless materialization of this asset (partitioned by
            ``CHECKPOINT_PARTITIONS``) per checkpoint event; ``None`` to disable.
        backfill: on the first tick, announce history too (default: only what happens next).
        max_runs_per_tick: cap on events per tick; later events follow next tick, in order.
        tick_budget_seconds: wall time a tick may spend on the API, retries included (kept
            15 s under Dagster's sensor gRPC timeout); unread work is left for the next tick.
        lookback_seconds: how far behind the newest session seen the finished-session scan
            reaches (covers clock and visibility lag).
        registration_wait_seconds: how long an unregistered checkpoint is re-checked.
        page_size: list page size (1-100).
        unavailable_alarm_seconds: when every tick has failed to read the API (5xx, timeouts,
            connection errors) for this long, one tick fails loudly (red in the UI); the
            sensor keeps retrying. Configuration errors (key, DNS, TLS) fail every tick.
        unordered_pages_per_tick: when the finished-session list has no time order, the
            pages of it a tick reads (a session born and ended between ticks is reported
            within ``2 * ceil(pages / unordered_pages_per_tick) + 1`` ticks).
    """

    resource_key: str = "together"
    checkpoint_asset_key: dg.AssetKey | None = CHECKPOINT_ASSET_KEY
    backfill: bool = False
    max_runs_per_tick: int = 25
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS
    lookback_seconds: float = 600.0
    registration_wait_seconds: float = 3600.0
    page_size: int = 100
    unavailable_alarm_seconds: float = 600.0
    unordered_pages_per_tick: int = 8

    def __post_init__(self) -> None:
        _resource_key(self)
        _at_least_one(self, "max_runs_per_tick", "unordered_pages_per_tick")
        if isinstance(self.page_size, bool) or not 1 <= self.page_size <= 100:
            raise _invalid(f"page_size must be between 1 and 100, got {self.page_size!r}")
        _positive(
            self,
            "tick_budget_seconds",
            "lookback_seconds",
            "registration_wait_seconds",
            "unavailable_alarm_seconds",
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


@dataclass(frozen=True, kw_only=True)
class ResourceSensorOptions:
    """How the model-resource sensor reads and announces, checked when built.

    Attributes:
        resource_key: as in :class:`PollingOptions`.
        expiring_lead_seconds: ``resource_expiring`` fires when a READY resource's
            ``expires_at`` is this close (once per deadline; activity moves the deadline).
        queued_long_seconds: ``resource_queued_long`` fires once a resource has been PENDING
            this long (tagged with its ``queue_position``).
        spend_db_path: where the spend asset keeps its tables (the sensor records each
            resource's billed span there), when not where the resource's ``database_url``
            puts every table (the default).
        max_runs_per_tick / tick_budget_seconds / lookback_seconds /
        unavailable_alarm_seconds: as in :class:`PollingOptions`.
    """

    resource_key: str = "together"
    expiring_lead_seconds: float = 600.0
    queued_long_seconds: float = 1800.0
    spend_db_path: str | None = None
    max_runs_per_tick: int = 25
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS
    lookback_seconds: float = 600.0
    unavailable_alarm_seconds: float = 600.0

    def __post_init__(self) -> None:
        _resource_key(self)
        _at_least_one(self, "max_runs_per_tick")
        for name in ("expiring_lead_seconds", "queued_long_seconds", "lookback_seconds"):
            if not getattr(self, name) >= 0:
                raise _invalid(f"{name} must be >= 0, got {getattr(self, name)!r}")
        _positive(self, "tick_budget_seconds", "unavailable_alarm_seconds")

    def tracker_config(self, kinds: frozenset[ResourceEventKind]) -> ResourceTrackerConfig:
        return ResourceTrackerConfig(
            kinds=kinds,
            max_events=self.max_runs_per_tick,
            expiring_lead_ms=int(self.expiring_lead_seconds * 1000),
            queued_long_ms=int(self.queued_long_seconds * 1000),
            lookback_ms=int(self.lookback_seconds * 1000),
        )


#: Runs per idle stretch of one resource before the guard gives up on it (the first + retries).
DEFAULT_STOP_ATTEMPTS = 3


@dataclass(frozen=True, kw_only=True)
class IdleGuardOptions:
    """How the idle guard ticks and retries; what it may stop is its ``IdlePolicy``.

    Attributes:
        resource_key: as in :class:`PollingOptions`.
        stop_attempts: runs per idle stretch before giving up (a failed run is requested
            again under a fresh run key).
        spend_db_path: as in :class:`ResourceSensorOptions` (a guard run records the billed
            span of the resource it stopped).
        tick_budget_seconds / unavailable_alarm_seconds: as in :class:`PollingOptions`.
    """

    resource_key: str = "together"
    stop_attempts: int = DEFAULT_STOP_ATTEMPTS
    spend_db_path: str | None = None
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS
    unavailable_alarm_seconds: float = 600.0

    def __post_init__(self) -> None:
        _resource_key(self)
        _at_least_one(self, "stop_attempts")
        _positive(self, "tick_budget_seconds", "unavailable_alarm_seconds")


@dataclass(frozen=True, kw_only=True)
class ChampionOptions:
    """Which assets the champion sensor reads and writes, and how its run is shaped.

    Attributes:
        key: the champion asset (partitioned by sweep).
        evaluation_key: the evaluation asset whose materializations are folded in.
        checkpoint_asset_key: the checkpoint asset whose metadata names each sweep.
        job_name: the asset job run when the sensor's ``target`` is an asset selection.
        partitioned_job: each ``champion_changed`` run carries the champion's checkpoint
            partition key (the target must use ``CHECKPOINT_PARTITIONS``).
        group_name: asset group of the champion asset (``build_champion_definitions``).
    """

    key: dg.AssetKey = CHAMPION_ASSET_KEY
    evaluation_key: dg.AssetKey = EVALUATION_ASSET_KEY
    checkpoint_asset_key: dg.AssetKey = CHECKPOINT_ASSET_KEY
    job_name: str = "together_rl_champion_changed"
    partitioned_job: bool = False
    group_name: str | None = "together_rl"


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
