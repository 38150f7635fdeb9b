"""Fault injection. A rule's ``pattern`` (``"METHOD /path"`` glob, ``"/path"`` for any method, or
a regex) matches the route template or the path; it fires on the next ``times`` matches, the
``nth`` ones, at a seeded ``rate`` or always; the first rule that fires wins."""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from .wire import error_body

Pattern = str | re.Pattern[str]


@dataclass
class FaultRule:
    """One fault. ``process``: the request still reaches the world before the fault replaces
    its response (default: only ``malformed``): a response lost after the server acted."""

    pattern: Pattern | None = None
    status: int | None = None
    times: int | None = None
    nth: Collection[int] | None = None
    rate: float | None = None
    delay_s: float = 0.0
    drop: bool = False
    reset_after_headers: bool = False
    malformed: bool = False
    retry_after: float | None = None
    retry_after_ms: int | None = None
    message: str | None = None
    headers: dict[str, str] | None = None
    process: bool | None = None
    matched: int = field(default=0, init=False)
    applied: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.nth = frozenset(self.nth) if self.nth is not None else None
        if len(self._actions()) > 1:
            raise ValueError("a fault rule has at most one of status / drop / reset / malformed")
        if not self._actions() and not self.delay_s:
            raise ValueError("a fault rule needs an action (status, drop, reset, malformed, delay)")

    def _actions(self) -> list[str]:
        """What replaces the response (a bare delay does not): at most one."""
        named = [n for n in ("drop", "reset_after_headers", "malformed") if getattr(self, n)]
        return ([f"status:{self.status}"] if self.status is not None else []) + named

    @property
    def terminal(self) -> bool:
        return bool(self._actions())

    @property
    def processes_request(self) -> bool:
        return self.process if self.process is not None else self.malformed or not self.terminal

    def label(self) -> str:
        """``"status:503"``, ``"drop"``, ``"delay:0.5"``, … (what the request log records)."""
        delay = [f"delay:{self.delay_s:g}"] if self.delay_s else []
        return "+".join(self._actions() + delay)  # never empty: a rule has an action or a delay

    def matches(self, method: str, path: str, template: str) -> bool:
        targets = (f"{method} {template}", f"{method} {path}")
        if isinstance(self.pattern, re.Pattern):
            return any(self.pattern.search(t) for t in targets)
        pattern = self.pattern or "* *"
        pattern = pattern if " " in pattern else f"* {pattern}"
        return any(fnmatchcase(t, pattern) for t in targets)

    def error_response(self) -> tuple[int, bytes, dict[str, str]]:
        status, headers = self.status or 500, dict(self.headers or {})
        if self.retry_after is not None:
            ra = float(self.retry_after)
            headers["Retry-After"] = str(int(ra)) if ra.is_integer() else f"{ra:g}"
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = str(self.retry_after_ms)
        message = self.message or f"simulated fault: HTTP {status}"
        return status, error_body(status, message, code="simulated_fault"), headers


class FaultPlan:
    """The simulator's fault rules (``sim.faults``), seeded for ``rate`` rules."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._rng = random.Random(f"faults:{seed}")

    @property
    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def add(self, pattern: Pattern | FaultRule | None = None, **kwargs: Any) -> FaultRule:
        """``add(FaultRule(...))`` or ``add("GET /v1/rl/*", status=503, times=2)``."""
        rule = pattern if isinstance(pattern, FaultRule) else FaultRule(pattern, **kwargs)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules = [r for r in self._rules if r is not rule]

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def decide(self, method: str, path: str, template: str) -> FaultRule | None:
        with self._lock:
            for rule in self._rules:
                if not rule.matches(method, path, template):
                    continue
                rule.matched += 1
                spent = rule.times is not None and rule.applied >= rule.times
                if rule.matched in rule.nth if rule.nth is not None else not spent and (
                        rule.rate is None or self._rng.random() < rule.rate):  # fmt: skip
                    rule.applied += 1
                    return rule
        return None
