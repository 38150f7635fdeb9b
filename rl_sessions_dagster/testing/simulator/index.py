"""Sorted keyset indices that make list pagination O(log n + page) at 100k items.

Every listable item has a key ``(sort_value, id)``; each index keeps the keys of all items and,
per status (or checkpoint type), a partition. Pages are read in *descending* key order starting
strictly below the ``after`` item's key, so a cursor stays valid however items are inserted or
change status between pages (keyset pagination, like the real service's id cursor).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Collection, Iterable, Iterator

Key = tuple[int, str]


def _desc_from(keys: list[Key], after: Key | None) -> Iterator[Key]:
    end = len(keys) if after is None else bisect_left(keys, after)
    return map(keys.__getitem__, range(end - 1, -1, -1))


class OrderedIndex:
    """Keys sorted ascending, partitioned by a status string; iterated newest (largest) first."""

    __slots__ = ("_all", "_parts")

    def __init__(self) -> None:
        self._all: list[Key] = []
        self._parts: dict[str, list[Key]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def add(self, key: Key, part: str) -> None:
        """Insert one key (O(n) memmove, fast in C even at 100k)."""
        insort(self._all, key)
        insort(self._parts.setdefault(part, []), key)

    def move(self, key: Key, old: str, new: str) -> None:
        """Move a key from one partition to another (status change)."""
        if old == new:
            return
        keys = self._parts.get(old)
        if keys is not None:
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                del keys[i]
        insort(self._parts.setdefault(new, []), key)

    def load(self, items: Iterable[tuple[Key, str]]) -> None:
        """Bulk insert: append everything, then sort once (what ``populate`` uses)."""
        all_keys = self._all
        parts = self._parts
        for key, part in items:
            all_keys.append(key)
            lst = parts.get(part)
            if lst is None:
                lst = parts[part] = []
            lst.append(key)
        all_keys.sort()
        for lst in parts.values():
            lst.sort()

    def clear(self) -> None:
        """Forget every key (used before a rebuild in another order)."""
        self._all = []
        self._parts = {}

    def iter_desc(self, after: Key | None, parts: Collection[str] | None = None) -> Iterator[Key]:
        """Keys strictly below ``after`` (all if None), largest first, optionally per partition."""
        if parts is None:
            return _desc_from(self._all, after)
        lists = [self._parts[p] for p in set(parts) if self._parts.get(p)]
        if not lists:
            return iter(())
        if len(lists) == 1:
            return _desc_from(lists[0], after)
        return heapq.merge(*(_desc_from(lst, after) for lst in lists), reverse=True)

    def part_counts(self) -> dict[str, int]:
        """Number of keys per non-empty partition."""
        return {p: len(keys) for p, keys in self._parts.items() if keys}

    def count(self, part: str | None = None) -> int:
        """Number of keys, overall or in one partition."""
        if part is None:
            return len(self._all)
        return len(self._parts.get(part, ()))
