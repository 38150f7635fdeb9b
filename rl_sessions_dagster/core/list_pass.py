"""Positional passes over a paged session list, resumable across ticks.

Two passes use this: the scan of the finished-session list (sessions born and ended between
ticks) and the discovery pass over the unfiltered list (sessions in statuses this library does
not know). Both must survive a tick that ends part-way (time budget, a cap on events, a failed
read): the position names the page and the last item done on it, never a count, so items that
are inserted meanwhile neither repeat nor vanish.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..api.models import TrainingSession
from .list_order import OrderEvidence
from .state import ScanPosition


@dataclass
class ScannedPage:
    """One page of a session list, with the ``after`` it was requested with."""

    after: str | None
    sessions: Sequence[TrainingSession]
    next_after: str | None = None
    #: what the pass saw of the order up to the end of this page.
    evidence: OrderEvidence | None = None


def run_pass(
    position: ScanPosition,
    pages: Sequence[ScannedPage],
    handle: Callable[[TrainingSession], bool],
) -> tuple[ScanPosition, bool]:
    """Feed the pages' sessions after ``position`` to ``handle`` in list order.

    ``handle`` returns False when it could not take the session (a cap): the pass stops there
    and the returned position points at that session. Returns (new position, stopped early).
    """
    position = ScanPosition(
        after=position.after,
        done_through=position.done_through,
        evidence=position.evidence.copy(),
    )
    for page in pages:
        if page.after != position.after:
            continue  # a page from a different position (should not happen); ignore it
        ids = [s.id for s in page.sessions]
        start = ids.index(position.done_through) + 1 if position.done_through in ids else 0
        for session in page.sessions[start:]:
            if not handle(session):
                return position, True
            position.done_through = session.id
        evidence = page.evidence.copy() if page.evidence else position.evidence
        position = ScanPosition(after=page.next_after, evidence=evidence)
    return position, False
