"""Request log (``sim.requests``): what the client sent and got back. Records never hold the
Authorization header; counters outlive the bounded record buffer, so ``count()`` stays exact."""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class RequestRecord:
    request_id: str
    method: str
    path: str
    template: str
    query: dict[str, list[str]]
    status: int | None
    fault: str | None
    idempotency_key: str | None
    authorized: bool
    duration_s: float
    started_at: float

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None


def _matches(method: str | None, template: str | None, m: str, t: str) -> bool:
    return (method is None or m == method.upper()) and (template is None or fnmatchcase(t, template))  # fmt: skip


class RequestLog:
    """Served requests, with counters per (method, template, status, fault)."""

    def __init__(self, max_records: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._counts: Counter[tuple[str, str, int | None, str | None]] = Counter()

    def record(self, rec: RequestRecord) -> None:
        with self._lock:
            self._records.append(rec)
            self._counts[(rec.method, rec.template, rec.status, rec.fault)] += 1

    def _items(self) -> list[tuple[tuple[str, str, int | None, str | None], int]]:
        with self._lock:
            return list(self._counts.items())

    def count(self, method: str | None = None, template: str | None = None, *, status: int | None = None,
              faulted: bool | None = None) -> int:  # fmt: skip
        """``template`` may be a glob."""
        return sum(n for (m, t, st, fault), n in self._items() if _matches(method, template, m, t)
                   and (status is None or st == status)
                   and (faulted is None or (fault is not None) == faulted))  # fmt: skip

    def counts(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (m, t, _, _), n in self._items():
            out[f"{m} {t}"] += n
        return dict(out)

    def fault_counts(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (_, _, _, fault), n in self._items():
            if fault is not None:
                out[fault] += n
        return dict(out)

    def records(self, method: str | None = None, template: str | None = None) -> list[RequestRecord]:  # fmt: skip
        """Retained records, oldest first."""
        with self._lock:
            recs = list(self._records)
        return [r for r in recs if _matches(method, template, r.method, r.template)]

    def last(self, method: str | None = None, template: str | None = None) -> RequestRecord | None:
        recs = self.records(method, template)
        return recs[-1] if recs else None

    def reset(self) -> None:
        with self._lock:
            self._records.clear()
            self._counts.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(self._counts.values())
