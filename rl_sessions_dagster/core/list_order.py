"""What a tracker knows of the finished-session list's order, which the API does not document:
the verdict (:class:`ListOrder`) and the evidence a pass gathers for it (:class:`OrderEvidence`).
"""

from dataclasses import dataclass
from enum import Enum


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
