"""The tracker's state and its compact, versioned JSON cursor.

Dagster copies a sensor's cursor into every tick row, so the cursor must stay small: it holds
only sessions that are still moving (plus terminal ones created inside the look-back window),
never history. Times are integer epoch milliseconds; known statuses are one letter.
"""

import json
from dataclasses import dataclass, field
from typing import Any

CURSOR_VERSION = 1

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


_ORDERS = {"u": "unordered", "n": "newest_first", "x": "unverified"}


class CursorError(ValueError):
    """The cursor could not be read (corrupt, foreign, or from another version)."""


@dataclass
class PendingCheckpoint:
    """An inference checkpoint seen without a registration; re-checked until a deadline."""

    checkpoint_id: str
    first_seen_ms: int


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


@dataclass
class ScanPosition:
    """Where the paged scan of terminal sessions stands: the page's ``after``, the id of the
    last item of that page already done (ids, not counts: sessions that end meanwhile are
    inserted into the list and would shift a count), and the oldest ``created_at`` met so far
    (to check the order across ticks)."""

    after: str | None = None
    done_through: str | None = None
    low_ms: int | None = None


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
    #: "unverified" until a complete pass saw the list newest first ("newest_first") or
    #: not ("unordered"). Only "newest_first" lets a pass stop early.
    order: str = "unverified"
    #: when the order was last verified by a complete pass.
    verified_ms: int = 0
    #: True while the one-off backfill pass over history is running.
    backfilling: bool = False
    tracked: dict[str, TrackedSession] = field(default_factory=dict)
    #: terminal sessions created inside the look-back window whose events are done.
    recent_terminal: dict[str, int] = field(default_factory=dict)

    def to_cursor(self) -> str:
        doc: dict[str, Any] = {
            "v": CURSOR_VERSION,
            "b": self.baseline_ms,
            "w": self.watermark_ms,
            "m": self.seen_max_ms,
            "p": self.pass_start_ms,
            "o": {v: k for k, v in _ORDERS.items()}[self.order],
            "vt": self.verified_ms,
            "t": {sid: _encode_tracked(t) for sid, t in self.tracked.items()},
            "r": self.recent_terminal,
        }
        if self.scan is not None:
            doc["a"] = [self.scan.after, self.scan.done_through, self.scan.low_ms]
        if self.backfilling:
            doc["k"] = 1
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> "TrackerState":
        """Parse a cursor; empty means a first tick. Raises CursorError on anything unreadable."""
        if not cursor:
            return cls()
        try:
            doc = json.loads(cursor)
            if not isinstance(doc, dict) or doc.get("v") != CURSOR_VERSION:
                raise CursorError(f"unsupported cursor version {doc.get('v')!r}")
            scan = doc.get("a")
            return cls(
                initialized=True,
                baseline_ms=int(doc["b"]),
                watermark_ms=int(doc["w"]),
                seen_max_ms=int(doc["m"]),
                pass_start_ms=int(doc["p"]),
                order=_ORDERS[doc["o"]],
                verified_ms=int(doc["vt"]),
                scan=ScanPosition(scan[0], scan[1], scan[2]) if scan else None,
                backfilling=bool(doc.get("k")),
                tracked={str(k): _decode_tracked(v) for k, v in doc["t"].items()},
                recent_terminal={str(k): int(v) for k, v in doc["r"].items()},
            )
        except CursorError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise CursorError(f"unreadable cursor: {type(exc).__name__}: {exc}") from None


def _encode_tracked(t: TrackedSession) -> list[Any]:
    mark = [t.mark.time, *t.mark.ids] if t.mark else 0
    out: list[Any] = [_STATUS_CODES.get(t.status, t.status), mark]
    if t.pending or t.terminal_ms is not None:
        out.append([[p.checkpoint_id, p.first_seen_ms] for p in t.pending])
    if t.terminal_ms is not None:
        out.append(t.terminal_ms)
    return out


def _decode_tracked(v: list[Any]) -> TrackedSession:
    status = _STATUS_FROM_CODE.get(v[0], v[0])
    mark = CheckpointMark(int(v[1][0]), [str(i) for i in v[1][1:]]) if v[1] else None
    pending = [PendingCheckpoint(str(c), int(t)) for c, t in v[2]] if len(v) > 2 else []
    terminal_ms = int(v[3]) if len(v) > 3 else None
    return TrackedSession(status=str(status), mark=mark, pending=pending, terminal_ms=terminal_ms)
