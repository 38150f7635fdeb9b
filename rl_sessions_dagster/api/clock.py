"""The API's own clock, read from the HTTP ``Date`` header of each response."""

from __future__ import annotations

import contextlib
import email.utils
from datetime import datetime

import httpx


def to_ms(ts: datetime | None) -> int | None:
    """An API timestamp as epoch milliseconds (how the trackers and cursors count time)."""
    return None if ts is None else int(ts.timestamp() * 1000)


class ServerClock:
    """The API's clock (HTTP ``Date``) at the last response: what a first tick calls history, so
    a skewed machine clock cannot hide sessions created just after the sensor started."""

    def __init__(self) -> None:
        self.last_ms: int | None = None

    def __call__(self, response: httpx.Response) -> None:
        with contextlib.suppress(TypeError, ValueError):  # TypeError: no Date header
            date = email.utils.parsedate_to_datetime(response.headers.get("date"))
            self.last_ms = int(date.timestamp() * 1000)
