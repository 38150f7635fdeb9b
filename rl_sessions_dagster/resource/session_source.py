"""The API client as the core's ``SessionSource``: what the session sensor and the sync read,
in one adapter, so both find changes the same way. No Dagster here."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import RLSessionsClient, ServerClock
from ..api.clock import to_ms
from ..api.enums import CheckpointType, SessionStatus
from ..api.errors import BadRequestError, DecodeError, NotFoundError
from ..api.models import Checkpoint, TrainingSession
from ..core.events import SessionFilter
from ..core.reading import ItemUnreadable, ListCursorRejected, SessionExcluded, StatusFilterRejected

ACTIVE = [s.short for s in SessionStatus if s.is_active]  # in the enum's (the API's) order
TERMINAL = [s.short for s in SessionStatus if s.is_terminal]
Page = tuple[list[TrainingSession], str | None]
_FORGOTTEN = (BadRequestError, NotFoundError)  # a resumed pass's ``after`` the API forgot


@dataclass
class ClientSessionSource:
    """The whole filter is checked again on every session read (listed or fetched), so the core
    never tracks a session the user did not ask for."""

    client: RLSessionsClient
    filter: SessionFilter
    deadline: float | None = None  # the tick's; None: no deadline (the sync)
    page_size: int = 100
    server_clock: ServerClock | None = None
    skipped: list[Any] = field(default_factory=list)  # unreadable list items of this tick
    user_id: str | None = None  # who "me" is, learnt from a list filtered by it
    _nobody_before_ms: int | None = None

    def _page(
        self, statuses: list[str] | None, after: str | None, refused: Any, signal: Any
    ) -> Page:
        """A page; an API refusal of the kinds ``refused`` is raised as ``signal`` (when set)."""
        try:
            page = self.client.list_sessions_page(
                after=after,
                limit=self.page_size,
                status=statuses,
                model_resources_id=self.filter.model_resources_id,
                created_by=self.filter.created_by,
                deadline=self.deadline,
            )
        except refused as exc:
            if signal is None:
                raise
            raise signal(str(exc)) from None
        self.skipped.extend(getattr(page, "skipped", ()))
        self._learn_user_id(page.data)
        kept = [s for s in page.data if self.filter.matches(s, user_id=self.user_id, listed=True)]
        return kept, page.next_cursor

    def _learn_user_id(self, sessions: Sequence[TrainingSession]) -> None:
        """A list filtered by ``created_by=me`` names "me" in every item (unless it drifted)."""
        if not self.filter.needs_user_id or self.user_id is not None:
            return
        creators = {s.created_by for s in sessions if s.created_by}
        if len(creators) == 1:
            self.user_id = creators.pop()

    def _resolve_user_id(self, session: TrainingSession) -> str | None:
        """Who "me" is, asking the API if no list told it yet; "me has no session" holds for the
        sessions created before that answer (one request per tick, not per session)."""
        created, before = to_ms(session.created_at), self._nobody_before_ms
        if self.user_id is None and not (before and created is not None and created < before):
            page = self.client.list_sessions_page(limit=1, created_by="me", deadline=self.deadline)
            self._learn_user_id(page.data)
            if self.user_id is None and self.server_clock is not None and self.server_clock.last_ms:
                # The Date header has one-second resolution.
                self._nobody_before_ms = self.server_clock.last_ms - 1000
        return self.user_id

    def list_active_page(self, after: str | None, extra_statuses: Sequence[str] = ()) -> Page:
        signal = StatusFilterRejected if extra_statuses else None
        return self._page([*ACTIVE, *extra_statuses], after, BadRequestError, signal)

    def list_page(self, after: str | None, *, terminal: bool) -> Page:
        signal = None if after is None else ListCursorRejected
        return self._page(TERMINAL if terminal else None, after, _FORGOTTEN, signal)

    def list_inference_checkpoints_page(
        self, after: str | None
    ) -> tuple[list[Checkpoint], str | None]:
        page = self.client.list_checkpoints_page(
            after=after, limit=self.page_size, type=CheckpointType.INFERENCE, deadline=self.deadline
        )
        self.skipped.extend(getattr(page, "skipped", ()))
        return list(page.data), page.next_cursor

    def get_session(self, session_id: str) -> TrainingSession | None:
        try:
            session = self.client.get_session(session_id, deadline=self.deadline)
        except NotFoundError:
            return None
        except DecodeError as exc:
            # Drifted beyond repair, or truncated: this one waits for the next tick.
            raise ItemUnreadable(f"session {session_id}: {exc}") from None
        user_id = self._resolve_user_id(session) if self.filter.needs_user_id else None
        if not self.filter.matches(session, user_id=user_id):
            raise SessionExcluded(session_id)
        return session

    def server_time_ms(self) -> int | None:
        return self.server_clock.last_ms if self.server_clock else None
