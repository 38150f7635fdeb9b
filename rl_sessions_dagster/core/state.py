"""The session tracker's state, which is also its compact, versioned JSON cursor, and what it
knows of the finished-session list's order (:class:`ListOrder`, :class:`OrderEvidence`).

Dagster copies a sensor's cursor into every tick row, so the cursor must stay small: it holds
only sessions that are still moving (plus terminal ones created inside the look-back window),
never history. Times are integer epoch milliseconds; known statuses are one letter; UUIDs are
written in 23 characters (:mod:`.cursor`).

:class:`TrackerState` is a pydantic model whose short aliases are the cursor's keys (format
v3). Finished sessions that only wait for registrations, the bulk of a busy cursor, are written
grouped by what they share (``pr``): fifty of them fit in 4 KB. This is the one format, from
0.2.0 on; a cursor of another version is refused (``CursorError``), and the sensor rebuilds its
state from its tick history.
"""

import functools
import hashlib
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from .cursor import CursorState, Id, LetterCodes, StateModel, compact_id, expand_id, fork


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
    """What a pass has seen of the list's order so far (carried across ticks).

    A plain dataclass, not a state model: it is updated once per listed item while a page is
    read, and is written inside its :class:`ScanPosition`."""

    oldest_ms: int | None = None
    newest_ms: int | None = None
    not_newest_first: bool = False
    not_oldest_first: bool = False
    #: an item older / newer than every one before it was seen: ties prove nothing.
    went_older: bool = False
    went_newer: bool = False

    def see(self, ms: int) -> None:
        if self.oldest_ms is not None and ms > self.oldest_ms:
            self.not_newest_first = True
        if self.newest_ms is not None and ms < self.newest_ms:
            self.not_oldest_first = True
        if self.oldest_ms is not None and ms < self.oldest_ms:
            self.went_older = True
        if self.newest_ms is not None and ms > self.newest_ms:
            self.went_newer = True
        self.oldest_ms = ms if self.oldest_ms is None else min(self.oldest_ms, ms)
        self.newest_ms = ms if self.newest_ms is None else max(self.newest_ms, ms)

    def copy(self) -> "OrderEvidence":
        return OrderEvidence(
            self.oldest_ms,
            self.newest_ms,
            self.not_newest_first,
            self.not_oldest_first,
            self.went_older,
            self.went_newer,
        )

    def verdict(self) -> ListOrder:
        """The order a complete pass showed. A pass of tied (or too few) timestamps shows
        none, so the order stays unverified and the next pass checks again."""
        if not self.not_newest_first and self.went_older:
            return ListOrder.NEWEST_FIRST
        if not self.not_oldest_first and self.went_newer:
            return ListOrder.OLDEST_FIRST
        if self.not_newest_first and self.not_oldest_first:
            return ListOrder.UNORDERED
        return ListOrder.UNVERIFIED

    @property
    def bits(self) -> int:
        flags = (self.not_newest_first, self.not_oldest_first, self.went_older, self.went_newer)
        return sum(1 << i for i, flag in enumerate(flags) if flag)

    @classmethod
    def of(cls, oldest_ms: int | None, newest_ms: int | None, bits: int) -> "OrderEvidence":
        return cls(oldest_ms, newest_ms, *(bool(bits & (1 << i)) for i in range(4)))


CURSOR_VERSION = 3


_STATUS_LETTERS = LetterCodes(
    {
        "TRAINING_SESSION_STATUS_CREATING": "C",
        "TRAINING_SESSION_STATUS_RUNNING": "R",
        "TRAINING_SESSION_STATUS_STOPPING": "s",
        "TRAINING_SESSION_STATUS_STOPPED": "S",
        "TRAINING_SESSION_STATUS_ERROR": "E",
        "TRAINING_SESSION_STATUS_EXPIRED": "X",
        "TRAINING_SESSION_STATUS_UNSPECIFIED": "U",
    }
)


encode_status = _STATUS_LETTERS.encode


decode_status = _STATUS_LETTERS.decode


#: a raw session status, written as one letter when known.
Status = Annotated[str, BeforeValidator(decode_status), PlainSerializer(encode_status)]


@functools.lru_cache(maxsize=8192)
def short_id(checkpoint_id: str) -> str:
    """The 8-hex-digit hash that stands for a checkpoint in a mark (ties of time)."""
    return hashlib.blake2b(checkpoint_id.encode(), digest_size=4).hexdigest()


class PendingCheckpoint(StateModel, frozen=True):
    """An inference checkpoint seen without a registration; re-checked until a deadline.

    ``created_ms`` lets the re-check page the newest-first checkpoint list only as far down as
    needed (None: unknown, e.g. from a v1 cursor, so the session is fetched by id instead).
    Written as ``[checkpoint id, first seen ms, created ms or null]``.
    """

    checkpoint_id: Id
    first_seen_ms: int
    created_ms: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, data: Any) -> Any:
        if isinstance(data, list | tuple) and len(data) == 3:
            return {"checkpoint_id": data[0], "first_seen_ms": data[1], "created_ms": data[2]}
        return data

    @model_serializer(mode="plain")
    def _to_list(self, info: SerializationInfo) -> list[Any]:
        cid = compact_id(self.checkpoint_id) if info.mode_is_json() else self.checkpoint_id
        return [cid, self.first_seen_ms, self.created_ms]


class CheckpointMark(StateModel):
    """The newest checkpoint time already announced, with the short ids announced *at* that
    time: timestamps tie (the API may round them), so time alone cannot tell old from new.
    Written as ``[time, short id, ...]``."""

    time: int
    ids: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, data: Any) -> Any:
        if isinstance(data, list) and data:
            return {"time": data[0], "ids": [str(i) for i in data[1:]]}
        return data

    @model_serializer(mode="plain")
    def _to_list(self) -> list[Any]:
        return [self.time, *self.ids]

    def is_new(self, key: tuple[int, str]) -> bool:
        return key[0] > self.time or (key[0] == self.time and key[1] not in self.ids)

    def advance(self, key: tuple[int, str]) -> None:
        if key[0] > self.time:
            self.time, self.ids = key[0], [key[1]]
        elif key[0] == self.time and key[1] not in self.ids:
            self.ids.append(key[1])


class TrackedSession(StateModel):
    """What the tracker remembers of a session it still watches.

    ``status`` is the last raw status applied ("" before the first observation was applied);
    ``mark`` says which checkpoints were already announced (any newer one is new);
    ``terminal_ms`` is set once the terminal event was emitted and the session only lingers
    for pending registrations.
    """

    status: Status = Field("", alias="s")
    mark: CheckpointMark | None = Field(None, alias="m")
    pending: list[PendingCheckpoint] = Field(default_factory=list, alias="p")
    terminal_ms: int | None = Field(None, alias="x")

    def is_new(self, key: tuple[int, str]) -> bool:
        return self.mark is None or self.mark.is_new(key)

    def announce(self, key: tuple[int, str]) -> None:
        if self.mark is None:
            self.mark = CheckpointMark(time=key[0], ids=[key[1]])
        else:
            self.mark.advance(key)

    @property
    def lingering(self) -> bool:
        """Terminal event out, only waiting for registrations."""
        return self.terminal_ms is not None and bool(self.pending)


class ScanPosition(StateModel):
    """Where a paged pass over a session list stands: the page's ``after``, the id of the last
    item of that page already done (ids, not counts: sessions that end meanwhile are inserted
    into the list and would shift a count), and what the pass saw of the order so far.

    Written flat: ``a``, ``d``, the evidence's oldest and newest times ``o``, ``n`` and its
    flags ``x`` (bits: not newest first, not oldest first, went older, went newer)."""

    after: Id | None = None
    done_through: Id | None = None
    evidence: OrderEvidence = Field(default_factory=OrderEvidence)

    @model_validator(mode="before")
    @classmethod
    def _from_doc(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.keys() & {"after", "done_through", "evidence"}:
            return data
        doc = dict(data)
        evidence = OrderEvidence.of(doc.pop("o", None), doc.pop("n", None), doc.pop("x", 0))
        return {"after": doc.pop("a", None), "done_through": doc.pop("d", None),
                "evidence": evidence, **doc}  # fmt: skip

    @model_serializer(mode="plain")
    def _to_doc(self, info: SerializationInfo) -> dict[str, Any]:
        ev, json_ids = self.evidence, info.mode_is_json()
        doc = {
            "a": compact_id(self.after) if json_ids and self.after else self.after,
            "d": compact_id(self.done_through)
            if json_ids and self.done_through
            else self.done_through,
            "o": ev.oldest_ms,
            "n": ev.newest_ms,
            "x": ev.bits,
        }
        return {k: v for k, v in doc.items() if v is not None and (k != "x" or v)}


class TrackerState(CursorState):
    """Everything the tracker carries from one tick to the next; its JSON is the cursor."""

    #: created_at floor of history at the first tick; older sessions are history.
    baseline_ms: int = Field(0, alias="b")
    #: sessions created before ``watermark_ms - lookback`` are known (tracked or history).
    watermark_ms: int = Field(0, alias="w")
    #: newest created_at seen so far; becomes the watermark once a scan pass that started
    #: after it completes.
    seen_max_ms: int = Field(0, alias="m")
    #: ``seen_max_ms`` when the current scan pass started.
    pass_start_ms: int = Field(0, alias="p")
    #: position of an unfinished scan pass, or None between passes.
    scan: ScanPosition | None = Field(None, alias="a")
    order: ListOrder = Field(ListOrder.UNVERIFIED, alias="o")
    #: when the order was last verified by a complete pass.
    verified_ms: int = Field(0, alias="vt")
    #: True while the one-off backfill pass over history is running.
    backfilling: bool = Field(False, alias="k")
    tracked: dict[Id, TrackedSession] = Field(default_factory=dict, alias="t")
    #: terminal sessions created inside the look-back window whose events are done.
    recent_terminal: dict[Id, int] = Field(default_factory=dict, alias="r")
    #: non-terminal statuses seen that this library does not know (e.g. a future PAUSED):
    #: added to the active-list filter so sessions in them are never lost.
    extra_active: list[str] = Field(default_factory=list, alias="xs")
    #: extra statuses the API refused as filter values (not sent again).
    unfilterable: list[str] = Field(default_factory=list, alias="xu")
    #: oldest-first lists: where the last complete pass ended (the next one resumes there).
    tail: ScanPosition | None = Field(None, alias="tl")
    #: position of a pass over the *unfiltered* session list that adopts every non-terminal
    #: session whatever its status; None when no such pass is due.
    discovery: ScanPosition | None = Field(None, alias="d")
    #: when the last discovery pass completed.
    discovered_ms: int = Field(0, alias="dt")
    #: the last history sessions announced by a running backfill pass.
    backfilled: list[Id] = Field(default_factory=list, alias="bf")
    #: checkpoint sensors: newest checkpoint time of the last complete read of the checkpoint
    #: list, sessions retired whose checkpoints that list may still show (newest time), and
    #: whether the list was ever seen out of its documented newest-first order.
    checkpoint_watermark_ms: int = Field(0, alias="cw")
    recent_checkpoints: dict[Id, int] = Field(default_factory=dict, alias="rc")
    checkpoint_list_untrusted: bool = Field(False, alias="cu")
    #: since when every tick failed to read the API (transient errors), if they do.
    failing_since_ms: int | None = Field(None, alias="f")

    def fork(self) -> "TrackerState":
        """A copy to build the next tick's state in, leaving this one as it was."""
        return fork(self)

    # --- the cursor's envelope: version, and sessions waiting for registrations -------------

    @model_validator(mode="before")
    @classmethod
    def _from_doc(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "v" not in data:
            return data  # built in code, by field name
        doc = dict(data)
        if doc.pop("v") != CURSOR_VERSION:
            raise ValueError("unsupported cursor version")
        if "pr" in doc:
            doc["t"] = {**doc.get("t", {}), **_read_waiting(doc.pop("pr"))}
        return doc

    @model_serializer(mode="wrap")
    def _to_doc(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        doc = handler(self)
        if not info.mode_is_json() or not info.by_alias:
            return doc
        waiting = _write_waiting(self.tracked)
        if waiting:
            tracked = doc.get("t", {})
            for sid in waiting.done:
                del tracked[compact_id(sid)]
            if not tracked:
                doc.pop("t", None)
            doc["pr"] = waiting.groups
        return {"v": CURSOR_VERSION, **doc}


_GroupKey = tuple[int, str, int]  # first seen, status code, terminal


@dataclass
class _Waiting:
    groups: list[list[Any]]
    done: list[str]


def _waiting_key(t: TrackedSession) -> _GroupKey | None:
    if t.terminal_ms is None or not t.pending or t.mark is None:
        return None
    first_seen = t.pending[0].first_seen_ms
    created = [p.created_ms for p in t.pending]
    if any(p.first_seen_ms != first_seen for p in t.pending) or None in created:
        return None
    newest = max(p.created_ms or 0 for p in t.pending)
    implied = [short_id(p.checkpoint_id) for p in t.pending if p.created_ms == newest]
    if t.mark.time != newest or t.mark.ids != implied:
        return None
    return first_seen, encode_status(t.status), t.terminal_ms


def _write_waiting(tracked: dict[str, TrackedSession]) -> _Waiting | None:
    groups: dict[_GroupKey, dict[str, list[Any]]] = {}
    done = []
    for sid, t in tracked.items():
        key = _waiting_key(t)
        if key is not None:
            flat = [x for p in t.pending for x in (compact_id(p.checkpoint_id),
                                                   (p.created_ms or 0) - key[0])]  # fmt: skip
            groups.setdefault(key, {})[compact_id(sid)] = flat
            done.append(sid)
    if not groups:
        return None
    out, previous = [], 0
    for (first_seen, code, terminal_ms), members in sorted(groups.items()):
        out.append([code, first_seen - previous, terminal_ms - first_seen, members])
        previous = first_seen
    return _Waiting(groups=out, done=done)


def _read_waiting(groups: Any) -> dict[str, Any]:
    """The ``pr`` groups as ``t`` entries, in cursor form (ids still compact: the model reads
    them); only the implied mark needs the checkpoint ids in full."""
    out: dict[str, Any] = {}
    first_seen = 0
    try:
        for code, seen_delta, terminal_delta, members in groups:
            first_seen += seen_delta
            for sid, flat in members.items():
                pairs = list(zip(flat[::2], flat[1::2], strict=True))
                pending = [[cid, first_seen, first_seen + delta] for cid, delta in pairs]
                newest = max(first_seen + delta for _, delta in pairs)
                ids = [short_id(expand_id(c)) for c, d in pairs if first_seen + d == newest]
                mark = [newest, *ids]
                out[sid] = {"s": code, "p": pending, "x": first_seen + terminal_delta, "m": mark}
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"unreadable waiting sessions: {exc}") from None
    return out
