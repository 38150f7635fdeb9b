"""What a tracker state means, as plain JSON data, read through attributes only.

The same function ran on the 0.2-dev code that wrote the fixtures in ``fixtures/cursors/``
(``*.meaning.json``) and runs on today's state models, so a fixture loading "with the same
meaning" is an equality of plain data, whatever the classes look like inside.
"""

from typing import Any


def _position(p: Any) -> Any:
    if p is None:
        return None
    ev = p.evidence
    return {
        "after": p.after,
        "done_through": p.done_through,
        "evidence": [
            ev.oldest_ms,
            ev.newest_ms,
            ev.not_newest_first,
            ev.not_oldest_first,
            ev.went_older,
            ev.went_newer,
        ],
    }


def _tracked(t: Any) -> dict[str, Any]:
    return {
        "status": t.status,
        "mark": None if t.mark is None else [t.mark.time, list(t.mark.ids)],
        "pending": [[p.checkpoint_id, p.first_seen_ms, p.created_ms] for p in t.pending],
        "terminal_ms": t.terminal_ms,
    }


def session_meaning(s: Any) -> dict[str, Any]:
    """Every field of the session tracker's state."""
    return {
        "initialized": s.initialized,
        "baseline_ms": s.baseline_ms,
        "watermark_ms": s.watermark_ms,
        "seen_max_ms": s.seen_max_ms,
        "pass_start_ms": s.pass_start_ms,
        "scan": _position(s.scan),
        "order": s.order.value,
        "verified_ms": s.verified_ms,
        "backfilling": s.backfilling,
        "tracked": {sid: _tracked(t) for sid, t in s.tracked.items()},
        "recent_terminal": dict(s.recent_terminal),
        "extra_active": list(s.extra_active),
        "unfilterable": list(s.unfilterable),
        "tail": _position(s.tail),
        "discovery": _position(s.discovery),
        "discovered_ms": s.discovered_ms,
        "backfilled": list(s.backfilled),
        "checkpoint_watermark_ms": s.checkpoint_watermark_ms,
        "recent_checkpoints": dict(s.recent_checkpoints),
        "checkpoint_list_untrusted": s.checkpoint_list_untrusted,
        "failing_since_ms": s.failing_since_ms,
    }


def resource_meaning(s: Any) -> dict[str, Any]:
    """Every field of the model-resource tracker's state."""
    return {
        "initialized": s.initialized,
        "baseline_ms": s.baseline_ms,
        "seen_max_ms": s.seen_max_ms,
        "tracked": {
            rid: {
                "status": t.status,
                "expiring_ms": t.expiring_ms,
                "queued": t.queued,
                "first_seen_ms": t.first_seen_ms,
                "ready": t.ready,
            }
            for rid, t in s.tracked.items()
        },
        "recent_terminal": dict(s.recent_terminal),
    }
