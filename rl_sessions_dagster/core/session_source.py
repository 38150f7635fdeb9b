"""What a tick reads from, and how a read that fails or runs out of time ends collection.

The source is the HTTP client in the sensor glue and an in-memory world in property tests;
the core only sees this protocol and the few exceptions below.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ..api.models import Checkpoint, TrainingSession
from .tracker import Observation

Page = tuple[list[TrainingSession], str | None]
T = TypeVar("T")


class StatusFilterRejected(Exception):
    """The API refused the extra statuses in the active-list filter (it validates them)."""


class ItemUnreadable(Exception):
    """One item the API returned could not be read (drift): skipped, retried next tick."""


class SessionExcluded(Exception):
    """A session fetched by id is outside the sensor's filter: it is never tracked."""


class ListCursorRejected(Exception):
    """The API refused a saved ``after`` (the item is gone, or the cursor expired)."""


class SessionSource(Protocol):
    """What the tracker needs to read. Pages return ``(items, next_after or None)``."""

    def list_active_page(self, after: str | None, extra_statuses: Sequence[str] = ()) -> Page:
        """Sessions in the known active statuses plus ``extra_statuses`` (raw constants).

        Raises :class:`StatusFilterRejected` if the API refuses those extra statuses."""
        ...

    def list_terminal_page(self, after: str | None) -> Page:
        """Finished sessions; raises :class:`ListCursorRejected` for a refused ``after``."""
        ...

    def list_all_page(self, after: str | None) -> Page:
        """The session list without a status filter (for the discovery pass); raises
        :class:`ListCursorRejected` for a refused ``after``."""
        ...

    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]:
        """The inference-checkpoint list, newest first (documented order)."""
        ...

    def get_session(self, session_id: str) -> TrainingSession | None:
        """The session, or None when the API answers 404; raises :class:`ItemUnreadable`
        when its body cannot be read and :class:`SessionExcluded` when the filter excludes it."""
        ...

    def server_time_ms(self) -> int | None:
        """The API's clock (HTTP ``Date``) at the last response, if known."""
        ...


@dataclass
class Collected:
    observation: Observation
    #: why collection stopped early ("" when it did not): budget, or the transient error.
    interrupted: str = ""
    requests: int = 0
    fetched_ids: list[str] = field(default_factory=list)
    #: sessions whose fetch returned something unreadable (kept tracked, retried next tick).
    unreadable: list[str] = field(default_factory=list)


class Interrupted(Exception):
    """Collection stops here; what was read is kept."""


class Reader:
    """Counts requests, checks the budget before each read and turns transient errors into
    an interruption."""

    def __init__(
        self,
        result: Collected,
        out_of_time: Callable[[], bool],
        transient: tuple[type[BaseException], ...],
    ) -> None:
        self.result, self.out_of_time, self.transient = result, out_of_time, transient

    def read(self, what: str, call: Callable[[], T]) -> T:
        if self.out_of_time():
            self.result.interrupted = f"time budget used up while {what}"
            raise Interrupted
        try:
            value = call()
        except self.transient as exc:
            self.result.interrupted = f"{type(exc).__name__}: {exc}"
            raise Interrupted from None
        self.result.requests += 1
        return value
