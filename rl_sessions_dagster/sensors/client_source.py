"""The HTTP side of a tick: the API client seen as the core's ``SessionSource``, with filters.

Server-side filters (model resource, creator) go in the query, and every field of the filter
is checked again on every session read, listed or fetched by id (sessions born between ticks
are found through the checkpoint list and fetched by id), so the core never tracks a session
the user did not ask for.
"""

from collections.abc import Sequence
from typing import Any

from ..api import RLSessionsClient, ServerClock
from ..api.clock import to_ms
from ..api.enums import ACTIVE_SESSION_STATUSES, TERMINAL_SESSION_STATUSES, CheckpointType
from ..api.errors import BadRequestError, DecodeError, NotFoundError
from ..api.models import Checkpoint, TrainingSession
from ..core.events import SessionFilter
from ..core.reading import (
    ItemUnreadable,
    ListCursorRejected,
    SessionExcluded,
    StatusFilterRejected,
)

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
        #: who "me" is (``created_by: me``), learnt from a list the API filtered by it.
        self.user_id: str | None = None
        self._nobody_before_ms: int | None = None

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
        self._learn_user_id(page.data)
        kept = [s for s in page.data if self.filter.matches(s, user_id=self.user_id, listed=True)]
        return kept, page.next_cursor

    def _learn_user_id(self, sessions: Sequence[TrainingSession]) -> None:
        """A list filtered by ``created_by=me`` names "me" in every item; a page naming several
        creators was not filtered (drift), so it teaches nothing."""
        if not self.filter.needs_user_id or self.user_id is not None:
            return
        creators = {s.created_by for s in sessions if s.created_by}
        if len(creators) == 1:
            self.user_id = creators.pop()

    def _resolve_user_id(self, session: TrainingSession) -> str | None:
        """Who "me" is, asking the API if no list told it yet. An answer that "me" has no
        session holds for the sessions created before it (one request per tick, not one per
        session fetched)."""
        created = to_ms(session.created_at)
        if self.user_id is None and not (
            self._nobody_before_ms is not None
            and created is not None
            and created < self._nobody_before_ms
        ):
            page = self.client.list_sessions_page(limit=1, created_by="me", deadline=self.deadline)
            self._learn_user_id(page.data)
            if self.user_id is None and self.clock is not None and self.clock.last_ms:
                # The Date header has one-second resolution.
                self._nobody_before_ms = self.clock.last_ms - 1000
        return self.user_id

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
            session = self.client.get_session(session_id, deadline=self.deadline)
        except NotFoundError:
            return None
        except DecodeError as exc:
            # Drifted beyond repair, or a truncated body: this session waits for the next
            # tick, the others go on.
            raise ItemUnreadable(f"session {session_id}: {exc}") from None
        user_id = self._resolve_user_id(session) if self.filter.needs_user_id else None
        if not self.filter.matches(session, user_id=user_id):
            raise SessionExcluded(session_id)
        return session

    def server_time_ms(self) -> int | None:
        return self.clock.last_ms if self.clock else None
