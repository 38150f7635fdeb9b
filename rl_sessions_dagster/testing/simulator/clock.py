"""The simulator's clock: real UTC time plus an offset, or a fully manual clock.

Time is kept as integer microseconds since the epoch so timestamps format exactly and compare
cheaply (float seconds lose the microsecond digit around 2026).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Literal

ClockMode = Literal["real", "manual"]

#: Start of a manual clock when none is given: fixed so seeded worlds are fully reproducible.
DEFAULT_MANUAL_START = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def to_micros(when: datetime) -> int:
    """Convert an aware (or UTC-naive) datetime to epoch microseconds."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(us: int) -> datetime:
    """Convert epoch microseconds to an aware UTC datetime."""
    return datetime.fromtimestamp(us // 1_000_000, tz=UTC).replace(microsecond=us % 1_000_000)


class SimClock:
    """Clock of a simulated world. Not locked itself: the world calls it under its own lock.

    ``mode="real"``: ``time.time()`` plus the accumulated offset (``advance`` jumps ahead).
    ``mode="manual"``: frozen at ``start`` plus the offset; only ``advance`` moves it.
    """

    def __init__(self, mode: ClockMode = "real", start: datetime | None = None) -> None:
        if mode not in ("real", "manual"):
            raise ValueError(f"clock must be 'real' or 'manual', not {mode!r}")
        self.mode: ClockMode = mode
        self._offset_us = 0
        self._start_us = to_micros(start or DEFAULT_MANUAL_START) if mode == "manual" else 0

    def now_us(self) -> int:
        """Current simulated time in epoch microseconds."""
        if self.mode == "manual":
            return self._start_us + self._offset_us
        return time.time_ns() // 1000 + self._offset_us

    def now(self) -> datetime:
        """Current simulated time as an aware UTC datetime."""
        return from_micros(self.now_us())

    def advance(self, seconds: float) -> None:
        """Move the clock forward; going backwards is refused (timers would misbehave)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset_us += round(seconds * 1_000_000)

    def offset_seconds(self) -> float:
        """How far the clock has been advanced in total."""
        return self._offset_us / 1_000_000
