"""Reader of the v1 cursor (release 0.1.0): compact JSON with positional lists.

Only read, never written: a sensor upgraded from 0.1.0 carries on from where it was, and its
next tick writes the current format.
"""

from typing import Any

from .errors import CursorError
from .state import (
    CheckpointMark,
    ListOrder,
    OrderEvidence,
    PendingCheckpoint,
    ScanPosition,
    TrackedSession,
    TrackerState,
    decode_status,
)

_ORDERS = {"u": ListOrder.UNORDERED, "n": ListOrder.NEWEST_FIRST, "x": ListOrder.UNVERIFIED}


def state_from_v1(doc: dict[str, Any]) -> TrackerState:
    try:
        scan = doc.get("a")
        return TrackerState(
            initialized=True,
            baseline_ms=int(doc["b"]),
            watermark_ms=int(doc["w"]),
            seen_max_ms=int(doc["m"]),
            pass_start_ms=int(doc["p"]),
            order=_ORDERS[doc["o"]],
            verified_ms=int(doc["vt"]),
            scan=ScanPosition(
                after=scan[0], done_through=scan[1], evidence=OrderEvidence(oldest_ms=scan[2])
            )
            if scan
            else None,
            backfilling=bool(doc.get("k")),
            tracked={str(k): _decode_tracked(v) for k, v in doc["t"].items()},
            recent_terminal={str(k): int(v) for k, v in doc["r"].items()},
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        # (pydantic's ValidationError is a ValueError)
        raise CursorError(f"unreadable v1 cursor: {type(exc).__name__}: {exc}") from None


def _decode_tracked(v: list[Any]) -> TrackedSession:
    mark = CheckpointMark(time=int(v[1][0]), ids=[str(i) for i in v[1][1:]]) if v[1] else None
    pending = (
        [PendingCheckpoint(checkpoint_id=str(c), first_seen_ms=int(t)) for c, t in v[2]]
        if len(v) > 2
        else []
    )
    terminal_ms = int(v[3]) if len(v) > 3 else None
    return TrackedSession(
        status=decode_status(str(v[0])), mark=mark, pending=pending, terminal_ms=terminal_ms
    )
