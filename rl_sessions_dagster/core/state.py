"""The tracker's state and its compact, versioned JSON cursor.

Dagster copies a sensor's cursor into every tick row, so the cursor must stay small: it holds
only sessions that are still moving (plus terminal ones created inside the look-back window),
never history. Times are integer epoch milliseconds; known statuses are one letter.

Format v2 is a pydantic model with one- or two-letter aliases; v1 cursors (0.1.0) are still
read (:mod:`._cursor_v1`), so upgrading the library never restarts a sensor.
"""

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CURSOR_VERSION = 2

_STATUS_CODES = {
    "TRAINING_SESSION_STATUS_CREATING": "C",
    "TRAINING_SESSION_STATUS_RUNNING": "R",
    "TRAINING_SESSION_STATUS_STOPPING": "s",
    "TRAINING_SESSION_STATUS_STOPPED": "S",
    "TRAINING_SESSION_STATUS_ERROR": "E",
    "TRAINING_SESSION_STATUS_EXPIRED": "X",
    "TRAINING_SESSION_STATUS_UNSPECIFIED": "U",
}
_STATUS_FROM_CODE = {code: raw for raw, code in _STATUS_CODES.items()}


def encode_status(raw: str) -> str:
    return _STATUS_CODES.get(raw, raw)


def decode_status(code: str) -> str:
    return _STATUS_FROM_CODE.get(code, code)


class ListOrder(str, Enum):
    """What the tracker knows of the finished-session list's order (it is undocumented).

    Verified by a complete pass: ``NEWEST_FIRST`` lets a pass stop at the floor,
    ``OLDEST_FIRST`` lets it follow the tail, ``UNORDERED`` bounds the pages read per tick.
    """

    UNVERIFIED = "unverified"
    NEWEST_FIRST = "newest_first"
    OLDEST_FIRST = "oldest_first"
    UNORDERED = "unordered"


@dataclass
class OrderEvidence:
    """What a pass has seen of the list's order so far (carried across ticks)."""

    oldest_ms: int | None = None
    newest_ms: int | None = None
    not_newest_first: bool = False
    not_oldest_first: bool = False

    def see(self, ms: int) -> None:
        if self.oldest_ms is not None and ms > self.oldest_ms:
            self.not_newest_first = True
        if self.newest_ms is not None and ms < self.newest_ms:
            self.not_oldest_first = True
        self.oldest_ms = ms if self.oldest_ms is None else min(self.oldest_ms, ms)
        self.newest_ms = ms if self.newest_ms is None else max(self.newest_ms, ms)

    def copy(self) -> "OrderEvidence":
        return OrderEvidence(
            self.oldest_ms, self.newest_ms, self.not_newest_first, self.not_oldest_first
        )

    def verdict(self) -> ListOrder:
        if not self.not_newest_first:
            return ListOrder.NEWEST_FIRST
        if not self.not_oldest_first:
            return ListOrder.OLDEST_FIRST
        return ListOrder.UNORDERED


class CursorError(ValueError):
    """The cursor could not be read (corrupt, foreign, or from another version)."""


@dataclass
class PendingCheckpoint:
    """An inference checkpoint seen without a registration; re-checked until a deadline.

    ``created_ms`` lets the re-check page the newest-first checkpoint list only as far down as
    needed (None: unknown, e.g. from a v1 cursor, so the session is fetched by id instead).
    """

    checkpoint_id: str
    first_seen_ms: int
    created_ms: int | None = None


@dataclass
class CheckpointMark:
    """The newest checkpoint time already announced, with the short ids announced *at* that
    time: timestamps tie (the API may round them), so time alone cannot tell old from new."""

    time: int
    ids: list[str] = field(default_factory=list)

    def is_new(self, key: tuple[int, str]) -> bool:
        return key[0] > self.time or (key[0] == self.time and key[1] not in self.ids)

    def advance(self, key: tuple[int, str]) -> None:
        if key[0] > self.time:
            self.time, self.ids = key[0], [key[1]]
        elif key[0] == self.time and key[1] not in self.ids:
            self.ids.append(key[1])


@dataclass
class TrackedSession:
    """What the tracker remembers of a session it still watches.

    ``status`` is the last raw status applied ("" before the first observation was applied);
    ``mark`` says which checkpoints were already announced (any newer one is new);
    ``terminal_ms`` is set once the terminal event was emitted and the session only lingers
    for pending registrations.
    """

    status: str = ""
    mark: CheckpointMark | None = None
    pending: list[PendingCheckpoint] = field(default_factory=list)
    terminal_ms: int | None = None

    def is_new(self, key: tuple[int, str]) -> bool:
        return self.mark is None or self.mark.is_new(key)

    def announce(self, key: tuple[int, str]) -> None:
        if self.mark is None:
            self.mark = CheckpointMark(key[0], [key[1]])
        else:
            self.mark.advance(key)

    @property
    def lingering(self) -> bool:
        """Terminal event out, only waiting for registrations."""
        return self.terminal_ms is not None and bool(self.pending)


@dataclass
class ScanPosition:
    """Where a paged pass over a session list stands: the page's ``after``, the id of the last
    item of that page already done (ids, not counts: sessions that end meanwhile are inserted
    into the list and would shift a count), and what the pass saw of the order so far."""

    after: str | None = None
    done_through: str | None = None
    evidence: OrderEvidence = field(default_factory=OrderEvidence)


@dataclass
class TrackerState:
    """Everything the tracker carries from one tick to the next."""

    initialized: bool = False
    #: created_at floor of history at the first tick; older sessions are history.
    baseline_ms: int = 0
    #: sessions created before ``watermark_ms - lookback`` are known (tracked or history).
    watermark_ms: int = 0
    #: newest created_at seen so far; becomes the watermark once a scan pass that started
    #: after it completes.
    seen_max_ms: int = 0
    #: ``seen_max_ms`` when the current scan pass started.
    pass_start_ms: int = 0
    #: position of an unfinished scan pass, or None between passes.
    scan: ScanPosition | None = None
    order: ListOrder = ListOrder.UNVERIFIED
    #: when the order was last verified by a complete pass.
    verified_ms: int = 0
    #: True while the one-off backfill pass over history is running.
    backfilling: bool = False
    tracked: dict[str, TrackedSession] = field(default_factory=dict)
    #: terminal sessions created inside the look-back window whose events are done.
    recent_terminal: dict[str, int] = field(default_factory=dict)
    #: non-terminal statuses seen that this library does not know (e.g. a future PAUSED):
    #: added to the active-list filter so sessions in them are never lost.
    extra_active: list[str] = field(default_factory=list)
    #: extra statuses the API refused as filter values (not sent again).
    unfilterable: list[str] = field(default_factory=list)
    #: oldest-first lists: where the last complete pass ended (the next one resumes there).
    tail: ScanPosition | None = None
    #: position of a pass over the *unfiltered* session list that adopts every non-terminal
    #: session whatever its status; None when no such pass is due.
    discovery: ScanPosition | None = None
    #: when the last discovery pass completed.
    discovered_ms: int = 0
    #: the last history sessions announced by a running backfill pass.
    backfilled: list[str] = field(default_factory=list)
    #: checkpoint sensors: newest checkpoint time of the last complete read of the checkpoint
    #: list, sessions retired whose checkpoints that list may still show (newest time), and
    #: whether the list was ever seen out of its documented newest-first order.
    checkpoint_watermark_ms: int = 0
    recent_checkpoints: dict[str, int] = field(default_factory=dict)
    checkpoint_list_untrusted: bool = False
    #: since when every tick failed to read the API (transient errors), if they do.
    failing_since_ms: int | None = None

    def to_cursor(self) -> str:
        return _CursorV2.from_state(self).model_dump_json(by_alias=True, exclude_defaults=True)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> "TrackerState":
        """Parse a cursor; empty means a first tick. Raises CursorError on anything unreadable."""
        if not cursor:
            return cls()
        try:
            doc = json.loads(cursor)
        except ValueError as exc:
            raise CursorError(f"unreadable cursor: not JSON ({exc})") from None
        version = doc.get("v") if isinstance(doc, dict) else None
        if version == 1:
            from ._cursor_v1 import state_from_v1

            return state_from_v1(doc)
        if version != CURSOR_VERSION:
            raise CursorError(f"unsupported cursor version {version!r}")
        try:
            return _CursorV2.model_validate(doc).to_state()
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CursorError(f"unreadable cursor: {where}: {first['msg']}") from None


# --- format v2 -------------------------------------------------------------------------------


class _Doc(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")


class _PositionDoc(_Doc):
    after: str | None = Field(None, alias="a")
    done_through: str | None = Field(None, alias="d")
    oldest_ms: int | None = Field(None, alias="o")
    newest_ms: int | None = Field(None, alias="n")
    #: bit 1: not newest first; bit 2: not oldest first
    broken: int = Field(0, alias="x")

    @classmethod
    def of(cls, p: ScanPosition | None) -> "_PositionDoc | None":
        if p is None:
            return None
        ev = p.evidence
        return cls(
            after=p.after,
            done_through=p.done_through,
            oldest_ms=ev.oldest_ms,
            newest_ms=ev.newest_ms,
            broken=int(ev.not_newest_first) | 2 * int(ev.not_oldest_first),
        )

    def to_position(self) -> ScanPosition:
        evidence = OrderEvidence(
            self.oldest_ms, self.newest_ms, bool(self.broken & 1), bool(self.broken & 2)
        )
        return ScanPosition(self.after, self.done_through, evidence)


class _TrackedDoc(_Doc):
    status: str = Field("", alias="s")
    #: [time, short id, ...] of the checkpoint mark
    mark: list[int | str] | None = Field(None, alias="m")
    #: [checkpoint id, first seen ms, created ms or null]
    pending: list[tuple[str, int, int | None]] = Field(default_factory=list, alias="p")
    terminal_ms: int | None = Field(None, alias="x")

    @classmethod
    def of(cls, t: TrackedSession) -> "_TrackedDoc":
        return cls(
            status=encode_status(t.status),
            mark=[t.mark.time, *t.mark.ids] if t.mark else None,
            pending=[(p.checkpoint_id, p.first_seen_ms, p.created_ms) for p in t.pending],
            terminal_ms=t.terminal_ms,
        )

    def to_tracked(self) -> TrackedSession:
        mark = None
        if self.mark:
            mark = CheckpointMark(int(self.mark[0]), [str(i) for i in self.mark[1:]])
        return TrackedSession(
            status=decode_status(self.status),
            mark=mark,
            pending=[PendingCheckpoint(c, f, m) for c, f, m in self.pending],
            terminal_ms=self.terminal_ms,
        )


class _CursorV2(_Doc):
    version: Literal[2] = Field(alias="v")
    baseline_ms: int = Field(alias="b")
    watermark_ms: int = Field(alias="w")
    seen_max_ms: int = Field(alias="m")
    pass_start_ms: int = Field(alias="p")
    order: ListOrder = Field(ListOrder.UNVERIFIED, alias="o")
    verified_ms: int = Field(0, alias="vt")
    scan: _PositionDoc | None = Field(None, alias="a")
    backfilling: bool = Field(False, alias="k")
    tracked: dict[str, _TrackedDoc] = Field(default_factory=dict, alias="t")
    recent_terminal: dict[str, int] = Field(default_factory=dict, alias="r")
    extra_active: list[str] = Field(default_factory=list, alias="xs")
    unfilterable: list[str] = Field(default_factory=list, alias="xu")
    discovery: _PositionDoc | None = Field(None, alias="d")
    tail: _PositionDoc | None = Field(None, alias="tl")
    discovered_ms: int = Field(0, alias="dt")
    failing_since_ms: int | None = Field(None, alias="f")
    checkpoint_watermark_ms: int = Field(0, alias="cw")
    backfilled: list[str] = Field(default_factory=list, alias="bf")
    recent_checkpoints: dict[str, int] = Field(default_factory=dict, alias="rc")
    checkpoint_list_untrusted: bool = Field(False, alias="cu")

    @classmethod
    def from_state(cls, s: TrackerState) -> "_CursorV2":
        return cls(
            version=2,
            baseline_ms=s.baseline_ms,
            watermark_ms=s.watermark_ms,
            seen_max_ms=s.seen_max_ms,
            pass_start_ms=s.pass_start_ms,
            order=s.order,
            verified_ms=s.verified_ms,
            scan=_PositionDoc.of(s.scan),
            backfilling=s.backfilling,
            tracked={sid: _TrackedDoc.of(t) for sid, t in s.tracked.items()},
            recent_terminal=s.recent_terminal,
            extra_active=s.extra_active,
            unfilterable=s.unfilterable,
            discovery=_PositionDoc.of(s.discovery),
            tail=_PositionDoc.of(s.tail),
            discovered_ms=s.discovered_ms,
            failing_since_ms=s.failing_since_ms,
            checkpoint_watermark_ms=s.checkpoint_watermark_ms,
            backfilled=s.backfilled,
            recent_checkpoints=s.recent_checkpoints,
            checkpoint_list_untrusted=s.checkpoint_list_untrusted,
        )

    def to_state(self) -> TrackerState:
        return TrackerState(
            initialized=True,
            baseline_ms=self.baseline_ms,
            watermark_ms=self.watermark_ms,
            seen_max_ms=self.seen_max_ms,
            pass_start_ms=self.pass_start_ms,
            scan=self.scan.to_position() if self.scan else None,
            order=self.order,
            verified_ms=self.verified_ms,
            backfilling=self.backfilling,
            tracked={sid: t.to_tracked() for sid, t in self.tracked.items()},
            recent_terminal=dict(self.recent_terminal),
            extra_active=list(self.extra_active),
            unfilterable=list(self.unfilterable),
            discovery=self.discovery.to_position() if self.discovery else None,
            tail=self.tail.to_position() if self.tail else None,
            discovered_ms=self.discovered_ms,
            failing_since_ms=self.failing_since_ms,
            checkpoint_watermark_ms=self.checkpoint_watermark_ms,
            backfilled=list(self.backfilled),
            recent_checkpoints=dict(self.recent_checkpoints),
            checkpoint_list_untrusted=self.checkpoint_list_untrusted,
        )
