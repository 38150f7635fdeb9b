"""Request log and counters (``sim.requests``): what the client actually sent and got back.

Records never contain the Authorization header (only whether the request was authorized);
counters survive the bounded record buffer, so ``count()`` is exact on long soak runs.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class RequestRecord:
    """One served request."""

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
        """Last value of a query parameter."""
        values = self.query.get(name)
        return values[-1] if values else None


def _template_matches(pattern: str | None, template: str) -> bool:
    if pattern is None:
        return True
    if "*" in pattern or "?" in pattern:
        return fnmatchcase(template, pattern)
    return pattern == template


class RequestLog:
    """Thread-safe log of served requests plus counters per (method, template, status, fault)."""

    def __init__(self, max_records: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._counts: Counter[tuple[str, str, int | None, str | None]] = Counter()

    def record(self, rec: RequestRecord) -> None:
        with self._lock:
            self._records.append(rec)
            self._counts[(rec.method, rec.template, rec.status, rec.fault)] += 1

    def count(
        self,
        method: str | None = None,
        template: str | None = None,
        *,
        status: int | None = None,
        faulted: bool | None = None,
    ) -> int:
        """Requests matching all given filters (``template`` may be a glob)."""
        with self._lock:
            items = list(self._counts.items())
        total = 0
        for (m, t, st, fault), n in items:
            if method is not None and m != method.upper():
                continue
            if not _template_matches(template, t):
                continue
            if status is not None and st != status:
                continue
            if faulted is not None and (fault is not None) != faulted:
                continue
            total += n
        return total

    def counts(self) -> dict[str, int]:
        """``{"METHOD /template": n}`` over all requests since the last reset."""
        out: Counter[str] = Counter()
        with self._lock:
            for (m, t, _, _), n in self._counts.items():
                out[f"{m} {t}"] += n
        return dict(out)

    def fault_counts(self) -> dict[str, int]:
        """``{fault label: n}`` of requests a fault was applied to."""
        out: Counter[str] = Counter()
        with self._lock:
            for (_, _, _, fault), n in self._counts.items():
                if fault is not None:
                    out[fault] += n
        return dict(out)

    def records(
        self, method: str | None = None, template: str | None = None
    ) -> list[RequestRecord]:
        """Retained records (oldest first), optionally filtered."""
        with self._lock:
            recs = list(self._records)
        return [
            r
            for r in recs
            if (method is None or r.method == method.upper())
            and _template_matches(template, r.template)
        ]

    def last(self, method: str | None = None, template: str | None = None) -> RequestRecord | None:
        """Most recent matching record."""
        recs = self.records(method, template)
        return recs[-1] if recs else None

    def reset(self) -> None:
        """Forget all records and counters."""
        with self._lock:
            self._records.clear()
            self._counts.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(self._counts.values())
