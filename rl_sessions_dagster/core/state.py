"""The trackers' state, also their cursor: Dagster copies it into every tick row, so it is small
(short aliases, epoch ms, status letters, 23-character UUIDs). Formats but 0.2.0's are refused."""

import base64
import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, NamedTuple, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from .events import ListOrder, OrderEvidence


class CursorError(ValueError):
    """Corrupt, foreign, or of another version."""


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def compact_id(value: str) -> str:
    """A UUID as ``~`` + base64url; other ids as themselves (one more ``~`` if ``~``-prefixed)."""
    if _UUID.match(value):
        return "~" + base64.urlsafe_b64encode(bytes.fromhex(value.replace("-", ""))).decode()[:22]
    return "~" + value if value.startswith("~") else value


def expand_id(value: str) -> str:
    if not value.startswith("~"):
        return value
    if value.startswith("~~"):
        return value[1:]
    try:
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(value[1:] + "==")))
    except ValueError:
        raise ValueError(f"not a compact id: {value!r}") from None


def _read_id(value: Any, info: ValidationInfo) -> Any:
    # Only a cursor's ids are compact: a model built in Python takes ids literally.
    if isinstance(value, str) and info.context and info.context.get("compact_ids"):
        return expand_id(value)
    return value


#: a session, checkpoint or resource id: written compactly, read back as the API spells it.
Id = Annotated[str, BeforeValidator(_read_id), PlainSerializer(compact_id, when_used="json")]
_Code = Callable[[str], str]


def letter_codes(prefix: str, names: str, letters: str) -> tuple[_Code, _Code]:
    """(encode, decode): ``prefix + name`` as the letter at the name's place; others as sent."""
    codes = dict(zip((prefix + name for name in names.split()), letters, strict=True))
    raws = {code: raw for raw, code in codes.items()}
    return (lambda raw: codes.get(raw, raw)), (lambda code: raws.get(code, code))


class StateModel(BaseModel):
    """Mutable, strict about unknown keys (a foreign cursor is an error), built at first use."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, extra="forbid", defer_build=True
    )


class CursorState(StateModel):
    """Written with its version (and ``kind``) first: another tracker's cursor is refused."""

    #: False until the first tick has run (not written: a cursor exists only after one).
    initialized: bool = Field(False, exclude=True)
    _what: ClassVar[str] = "cursor"
    _version: ClassVar[int]
    _kind: ClassVar[str | None] = None

    def to_cursor(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_defaults=True)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> Self:
        """Empty means a first tick; raises CursorError on anything unreadable."""
        if not cursor:
            return cls()
        try:
            state = cls.model_validate_json(cursor, context={"compact_ids": True})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CursorError(f"unreadable {cls._what}: {where}: {first['msg']}") from None
        state.initialized = True
        return state

    @model_validator(mode="before")
    @classmethod
    def _open(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.keys() & {"v", "kind"}:
            return data  # built in code, by field name
        doc = dict(data)
        if doc.pop("kind", None) != cls._kind or doc.pop("v", None) != cls._version:
            raise ValueError(f"not a {cls._what} of this version")
        return cls._unpack(doc)

    @model_serializer(mode="wrap")
    def _seal(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        doc = handler(self)
        if not info.mode_is_json() or not info.by_alias:
            return doc
        kind = {} if self._kind is None else {"kind": self._kind}
        return {"v": self._version, **kind, **self._pack(doc)}

    @classmethod
    def _unpack(cls, doc: dict[str, Any]) -> dict[str, Any]:
        return doc

    def _pack(self, doc: dict[str, Any]) -> dict[str, Any]:
        return doc


CURSOR_VERSION = 3

_encode_status, _decode_status = letter_codes(
    "TRAINING_SESSION_STATUS_",
    "CREATING RUNNING STOPPING STOPPED ERROR EXPIRED UNSPECIFIED",
    "CRsSEXU",
)

#: a raw session status, written as one letter when known.
Status = Annotated[str, BeforeValidator(_decode_status), PlainSerializer(_encode_status)]


def short_id(checkpoint_id: str) -> str:
    """The 8-hex-digit hash that stands for a checkpoint in a mark (ties of time)."""
    return hashlib.blake2b(checkpoint_id.encode(), digest_size=4).hexdigest()


class PendingCheckpoint(NamedTuple):
    """Unregistered, re-checked until a deadline; ``created_ms`` bounds the re-check's paging."""

    checkpoint_id: Id
    first_seen_ms: int
    created_ms: int | None = None


class CheckpointMark(StateModel):
    """The newest time announced and the short ids announced at it (times tie)."""

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


class TrackedSession(StateModel):
    """A session still watched; ``terminal_ms`` once only registrations keep it."""

    status: Status = Field("", alias="s")
    mark: CheckpointMark | None = Field(None, alias="m")
    pending: list[PendingCheckpoint] = Field(default_factory=list, alias="p")
    terminal_ms: int | None = Field(None, alias="x")

    def is_new(self, key: tuple[int, str]) -> bool:
        m = self.mark
        return m is None or key[0] > m.time or (key[0] == m.time and key[1] not in m.ids)

    def announce(self, key: tuple[int, str]) -> None:
        if self.mark is None or key[0] > self.mark.time:
            self.mark = CheckpointMark(time=key[0], ids=[key[1]])
        elif key[0] == self.mark.time and key[1] not in self.mark.ids:
            self.mark.ids.append(key[1])

    @property
    def lingering(self) -> bool:
        return self.terminal_ms is not None and bool(self.pending)


class ScanPosition(StateModel):
    """A page's ``after`` and the last item done on it (inserts would shift a count)."""

    after: Id | None = Field(None, alias="a")
    done_through: Id | None = Field(None, alias="d")
    oldest_ms: int | None = Field(None, alias="o")
    newest_ms: int | None = Field(None, alias="n")
    bits: int = Field(0, alias="x")

    @classmethod
    def at(cls, after: str | None, ev: OrderEvidence) -> Self:
        return cls(after=after, oldest_ms=ev.oldest_ms, newest_ms=ev.newest_ms, bits=ev.bits)

    @property
    def evidence(self) -> OrderEvidence:
        return OrderEvidence.of(self.oldest_ms, self.newest_ms, self.bits)


class TrackerState(CursorState):
    """Everything the session tracker carries from one tick to the next."""

    #: created_at floor of history at the first tick.
    baseline_ms: int = Field(0, alias="b")
    #: sessions created before ``watermark_ms - lookback`` are known (tracked or history).
    watermark_ms: int = Field(0, alias="w")
    #: newest created_at seen; becomes the watermark once a pass started after it completes.
    seen_max_ms: int = Field(0, alias="m")
    #: ``seen_max_ms`` when the current scan pass started.
    pass_start_ms: int = Field(0, alias="p")
    scan: ScanPosition | None = Field(None, alias="a")
    order: ListOrder = Field(ListOrder.UNVERIFIED, alias="o")
    verified_ms: int = Field(0, alias="vt")
    backfilling: bool = Field(False, alias="k")
    tracked: dict[Id, TrackedSession] = Field(default_factory=dict, alias="t")
    #: terminal sessions inside the look-back window, events done.
    recent_terminal: dict[Id, int] = Field(default_factory=dict, alias="r")
    #: unknown non-terminal statuses seen (a future PAUSED), added to the active-list filter.
    extra_active: list[str] = Field(default_factory=list, alias="xs")
    unfilterable: list[str] = Field(default_factory=list, alias="xu")
    #: oldest-first lists: where the next pass resumes.
    tail: ScanPosition | None = Field(None, alias="tl")
    #: the unfiltered pass adopting sessions in unknown statuses.
    discovery: ScanPosition | None = Field(None, alias="d")
    discovered_ms: int = Field(0, alias="dt")
    #: the last history sessions announced by a running backfill pass.
    backfilled: list[Id] = Field(default_factory=list, alias="bf")
    #: checkpoint sensors: last complete list read, retired sessions it may show, order broken.
    checkpoint_watermark_ms: int = Field(0, alias="cw")
    recent_checkpoints: dict[Id, int] = Field(default_factory=dict, alias="rc")
    checkpoint_list_untrusted: bool = Field(False, alias="cu")
    #: since when every tick failed (transient errors).
    failing_since_ms: int | None = Field(None, alias="f")

    _version: ClassVar[int] = CURSOR_VERSION

    # Finished sessions waiting for registrations (a busy cursor's bulk) are grouped (``pr``).
    @classmethod
    def _unpack(cls, doc: dict[str, Any]) -> dict[str, Any]:
        if "pr" in doc:
            doc["t"] = {**doc.get("t", {}), **_read_waiting(doc.pop("pr"))}
        return doc

    def _pack(self, doc: dict[str, Any]) -> dict[str, Any]:
        groups = _write_waiting(self.tracked)
        if groups:
            tracked = doc.get("t", {})
            for cid in [cid for group in groups for cid in group[3]]:
                del tracked[cid]
            if not tracked:
                doc.pop("t", None)
            doc["pr"] = groups
        return doc


def _waiting_key(t: TrackedSession) -> tuple[int, str, int] | None:
    if t.terminal_ms is None or not t.pending or t.mark is None:
        return None
    first_seen = t.pending[0].first_seen_ms
    if any(p.first_seen_ms != first_seen or p.created_ms is None for p in t.pending):
        return None
    newest = max(p.created_ms or 0 for p in t.pending)
    implied = [short_id(p.checkpoint_id) for p in t.pending if p.created_ms == newest]
    if t.mark.time != newest or t.mark.ids != implied:
        return None
    return first_seen, _encode_status(t.status), t.terminal_ms


def _write_waiting(tracked: dict[str, TrackedSession]) -> list[list[Any]]:
    groups: dict[tuple[int, str, int], dict[str, list[Any]]] = {}
    for sid, t in tracked.items():
        key = _waiting_key(t)
        if key is not None:
            flat = [
                x
                for p in t.pending
                for x in (compact_id(p.checkpoint_id), (p.created_ms or 0) - key[0])
            ]
            groups.setdefault(key, {})[compact_id(sid)] = flat
    out, previous = [], 0
    for (first_seen, code, terminal_ms), members in sorted(groups.items()):
        out.append([code, first_seen - previous, terminal_ms - first_seen, members])
        previous = first_seen
    return out


def _read_waiting(groups: Any) -> dict[str, Any]:  # as ``t`` entries, ids still compact
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
