"""The HTTP side of a tick: the API client seen as the core's ``SessionSource``, with filters.

Server-side filters (model resource, creator) go in the query; name / W&B-project matches are
applied to every session read, so the core never tracks a session the user did not ask for.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..api import BadRequestError, DecodeError, NotFoundError, ServerClock
from ..api.enums import ACTIVE_SESSION_STATUSES, TERMINAL_SESSION_STATUSES, CheckpointType
from ..api.models import Checkpoint, TrainingSession
from ..core.filters import SessionFilter
from ..core.poll import ItemUnreadable, ListCursorRejected, StatusFilterRejected

if TYPE_CHECKING:  # the client (and httpx) load when a tick builds one
    from ..api import RLSessionsClient

_ORDER = ("CREATING", "RUNNING", "STOPPING", "STOPPED", "ERROR", "EXPIRED")
ACTIVE = sorted((s.short for s in ACTIVE_SESSION_STATUSES), key=_ORDER.index)
TERMINAL = sorted((s.short for s in TERMINAL_SESSION_STATUSES), key=_ORDER.index)


class ClientSessionSource:
    """Reads for one tick, every call bounded by the tick's deadline."""

    def __init__(
        self,
        client: "RLSessionsClient",
        session_filter: SessionFilter,
        *,
        deadline: float,
        page_size: int = 100,
        server_clock: ServerClock | None = None,
    ) -> None:
        self.client = client
        self.filter = session_filter
        self.deadline = deadline
        self.page_size = page_size
        self.clock = server_clock
        #: list items that could not be read this tick (the rest of their page is used).
        self.skipped: list[Any] = []

    def _page(
        self, statuses: list[str] | None, after: str | None
    ) -> tuple[list[TrainingSession], str | None]:
        page = self.client.list_sessions_page(
            after=after,
            limit=self.page_size,
            status=statuses,
            model_resources_id=self.filter.model_resources_id,
            created_by=self.filter.created_by,
            deadline=self.deadline,
        )
        self.skipped.extend(getattr(page, "skipped", ()))
        return [s for s in page.data if self.filter.matches(s)], page.next_cursor

    def list_active_page(
        self, after: str | None, extra_statuses: Sequence[str] = ()
    ) -> tuple[list[TrainingSession], str | None]:
        if not extra_statuses:
            return self._page(ACTIVE, after)
        try:
            return self._page([*ACTIVE, *extra_statuses], after)
        except BadRequestError as exc:
            raise StatusFilterRejected(str(exc)) from None

    def list_terminal_page(self, after: str | None) -> tuple[list[TrainingSession], str | None]:
        return self._resumable_page(TERMINAL, after)

    def list_all_page(self, after: str | None) -> tuple[list[TrainingSession], str | None]:
        return self._resumable_page(None, after)

    def _resumable_page(
        self, statuses: list[str] | None, after: str | None
    ) -> tuple[list[TrainingSession], str | None]:
        """A page of a pass that may resume from an ``after`` saved ticks ago: the API may
        have forgotten it (the item is gone, or the cursor expired)."""
        try:
            return self._page(statuses, after)
        except (BadRequestError, NotFoundError) as exc:
            if after is None:
                raise
            raise ListCursorRejected(str(exc)) from None

    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]:
        page = self.client.list_checkpoints_page(
            after=after,
            limit=self.page_size,
            type=CheckpointType.INFERENCE,
            deadline=self.deadline,
        )
        self.skipped.extend(getattr(page, "skipped", ()))
        return list(page.data), page.next_cursor

    def get_session(self, session_id: str) -> TrainingSession | None:
        try:
            return self.client.get_session(session_id, deadline=self.deadline)
        except NotFoundError:
            return None
        except DecodeError as exc:
            # Drifted beyond repair, or a truncated body: this session waits for the next
            # tick, the others go on.
            raise ItemUnreadable(f"session {session_id}: {exc}") from None

    def server_time_ms(self) -> int | None:
        return self.clock.last_ms if self.clock else None
