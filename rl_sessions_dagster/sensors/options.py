"""The typed, frozen inputs of a sensor: how it polls (:class:`PollingOptions`) and where each
event kind goes (:class:`EventRoute`). Both are checked when built, so a mistake fails at
definitions load, not at the first event."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, TypedDict, TypeVar

import dagster as dg

from ..core import CHECKPOINT_EVENTS, EventKind, TrackerConfig
from ..partitions import CHECKPOINT_PARTITIONS
from .run_requests import RunRequestFn

if TYPE_CHECKING:
    from dagster._core.definitions.asset_selection import CoercibleToAssetSelection
    from dagster._core.definitions.target import ExecutableDefinition

DEFAULT_TICK_BUDGET_SECONDS = 40.0
K = TypeVar("K", bound=Enum)


def _invalid(message: str) -> dg.DagsterInvalidDefinitionError:
    return dg.DagsterInvalidDefinitionError(message)


@dataclass(frozen=True)
class PollingOptions:
    """How a sensor reads the API. One object, shared by every route of the sensor.

    Attributes:
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

    backfill: bool = False
    max_runs_per_tick: int = 25
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS
    lookback_seconds: float = 600.0
    registration_wait_seconds: float = 3600.0
    page_size: int = 100
    unavailable_alarm_seconds: float = 600.0
    unordered_pages_per_tick: int = 8

    def __post_init__(self) -> None:
        if isinstance(self.max_runs_per_tick, bool) or not self.max_runs_per_tick >= 1:
            raise _invalid(f"max_runs_per_tick must be at least 1, got {self.max_runs_per_tick!r}")
        if isinstance(self.unordered_pages_per_tick, bool) or not self.unordered_pages_per_tick >= 1:
            raise _invalid(
                f"unordered_pages_per_tick must be at least 1, got {self.unordered_pages_per_tick!r}"
            )
        if isinstance(self.page_size, bool) or not 1 <= self.page_size <= 100:
            raise _invalid(f"page_size must be between 1 and 100, got {self.page_size!r}")
        for name in (
            "tick_budget_seconds",
            "lookback_seconds",
            "registration_wait_seconds",
            "unavailable_alarm_seconds",
        ):
            if not getattr(self, name) > 0:
                raise _invalid(f"{name} must be positive, got {getattr(self, name)!r}")

    def tracker_config(self, kinds: frozenset[EventKind]) -> TrackerConfig:
        return TrackerConfig(
            kinds=kinds,
            max_events=self.max_runs_per_tick,
            lookback_ms=int(self.lookback_seconds * 1000),
            registration_wait_ms=int(self.registration_wait_seconds * 1000),
            backfill=self.backfill,
            unordered_pages_per_tick=self.unordered_pages_per_tick,
        )


class PollingKwargs(TypedDict, total=False):
    """The 0.1.0 spelling: polling knobs as loose keyword arguments (deprecated; use
    ``options=PollingOptions(...)``)."""

    backfill: bool
    max_runs_per_tick: int
    tick_budget_seconds: float
    lookback_seconds: float
    registration_wait_seconds: float
    page_size: int
    unavailable_alarm_seconds: float


class UnknownEventKind(dg.DagsterInvalidDefinitionError, ValueError):
    """An event kind name this library does not know. Also a ``ValueError``, which is what
    0.1 raised for it, so code that caught that keeps working."""


def parse_kinds(enum: type[K], kinds: Iterable[K | str], *, noun: str = "event kind") -> frozenset[K]:
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


@dataclass(frozen=True)
class EventRoute:
    """Which event kinds go to which target: a job, or an asset selection (run as an asset job
    named ``job_name``). Exactly one of ``job`` and ``assets``.

    ``partitions_def`` applies to checkpoint events: each run gets the checkpoint's partition
    key, and the target must be partitioned by it (checked at definitions load). Set it to
    ``None`` for unpartitioned checkpoint runs. A route that also takes session events (which
    have no checkpoint) cannot be partitioned.
    """

    event_kinds: Iterable[EventKind | str]
    job: "ExecutableDefinition | None" = None
    assets: "CoercibleToAssetSelection | None" = None
    job_name: str | None = None
    partitions_def: dg.DynamicPartitionsDefinition | None = field(default=CHECKPOINT_PARTITIONS)
    run_request_fn: RunRequestFn | None = None
    #: The parsed ``event_kinds`` (which is normalised to the same set when built).
    kinds: frozenset[EventKind] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", event_kinds(self.event_kinds))
        object.__setattr__(self, "event_kinds", self.kinds)
        if (self.job is None) == (self.assets is None):
            raise _invalid("an EventRoute takes exactly one of job= and assets=")
        if self.job is not None and self.job_name is not None:
            raise _invalid("job_name names the asset job made for assets=; a job has its name")
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
