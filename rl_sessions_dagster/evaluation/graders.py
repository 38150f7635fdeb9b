"""Built-in graders, or ``package.module:function`` called as ``function(answer, item)`` in the
runner's threads (so thread-safe) returning a bool, a number in [0, 1] (>= 0.5 passes), a
:class:`Grade` or None. ``unreadable`` is not "wrong": format and reasoning regressions differ."""

from __future__ import annotations

import json
import math
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .dataset import EvalItem

__all__ = ["Grade", "Grader", "GraderSpec", "Verdict", "resolve_grader"]

Verdict = Literal["pass", "fail", "unreadable"]
GraderType = Literal["exact", "contains", "regex", "numeric", "json_field", "function"]
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Grade:
    verdict: Verdict
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class GraderSpec(BaseModel):
    """One grader as configured: ``type`` picks it; each other field names the types it serves."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: GraderType = Field(description="exact, contains, regex, numeric, json_field, function.")
    name: str | None = Field(None, description="Name in results (default: type or function).")
    case_sensitive: bool = Field(False, description="exact, contains, regex: compare case too.")
    pattern: str | None = Field(
        default=None,
        description="regex: the pattern the answer must match (default: the item's expected).",
    )
    abs_tol: float = Field(0.0, ge=0, description="numeric, json_field: absolute tolerance.")
    rel_tol: float = Field(0.0, ge=0, description="numeric, json_field: relative tolerance.")
    pick: Literal["first", "last"] = Field(
        "last", description="numeric: which number of the answer is its answer."
    )
    path: str | None = Field(None, description="json_field: dotted path, e.g. 'a.0.b'.")
    function: str | None = Field(None, description="function: 'package.module:function' to import.")


@dataclass(frozen=True)
class Grader:
    """A configured grader: ``grade(answer, item)``, and ``check(item)`` when the dataset loads."""

    spec: GraderSpec
    fn: Callable[[str, EvalItem], Grade] = field(repr=False)

    @property
    def name(self) -> str:
        spec = self.spec
        return spec.name or (spec.function if spec.type == "function" else spec.type) or ""

    def grade(self, answer: str, item: EvalItem) -> Grade:
        try:
            return self.fn(answer, item)
        except Exception as exc:  # a grader bug is shown per item, not a crashed run
            return Grade("unreadable", f"grader raised {type(exc).__name__}: {exc}")

    def check(self, item: EvalItem) -> str | None:
        """Why this grader can never grade ``item`` (None when it can)."""
        spec, expected = self.spec, item.expected
        if spec.type == "numeric" and _as_number(expected) is None:
            return f"grader {self.name!r}: expected {expected!r} is not a number"
        if spec.type == "regex" and spec.pattern is None:
            if not isinstance(expected, str):
                return f"grader {self.name!r}: expected must be a regex string"
            try:
                re.compile(expected)
            except re.error as exc:
                return f"grader {self.name!r}: expected is not a valid regex ({exc})"
        if (spec.type in ("exact", "contains") and isinstance(expected, dict | bool)) or (
            spec.type == "contains" and isinstance(expected, list) and not expected
        ):
            return f"grader {self.name!r}: expected must be text (or a list of texts)"
        return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value.replace(",", "").strip() if isinstance(value, str) else value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _close(a: float, b: float, spec: GraderSpec) -> bool:
    return math.isclose(a, b, rel_tol=spec.rel_tol, abs_tol=spec.abs_tol) or a == b


def _fold(text: str, spec: GraderSpec) -> str:
    text = " ".join(text.split())
    return text if spec.case_sensitive else text.casefold()


def _text(spec: GraderSpec) -> Callable[[str, EvalItem], Grade]:
    def grade(answer: str, item: EvalItem) -> Grade:
        got = _fold(answer, spec)
        texts = item.expected if isinstance(item.expected, list) else [item.expected]
        wanted = [_fold(str(t), spec) for t in texts]
        ok = any(w in got if spec.type == "contains" else w == got for w in wanted)
        return Grade("pass" if ok else "fail")

    return grade


def _regex(spec: GraderSpec) -> Callable[[str, EvalItem], Grade]:
    flags = 0 if spec.case_sensitive else re.IGNORECASE
    fixed = re.compile(spec.pattern, flags) if spec.pattern is not None else None

    def grade(answer: str, item: EvalItem) -> Grade:
        pattern = fixed or re.compile(str(item.expected), flags)
        return Grade("pass" if pattern.search(answer) else "fail")

    return grade


def _numeric(spec: GraderSpec) -> Callable[[str, EvalItem], Grade]:
    def grade(answer: str, item: EvalItem) -> Grade:
        found = _NUMBER.findall(answer)
        if not found:
            return Grade("unreadable", "no number in the answer")
        got = _as_number(found[0 if spec.pick == "first" else -1])
        want = _as_number(item.expected)
        if got is None or want is None:
            return Grade("unreadable", "number out of range")
        return Grade("pass" if _close(got, want, spec) else "fail", f"read {got:g}")

    return grade


def _json_field(spec: GraderSpec) -> Callable[[str, EvalItem], Grade]:
    parts = [p for p in (spec.path or "").split(".") if p]

    def grade(answer: str, item: EvalItem) -> Grade:
        # the whole text, else a fenced block, else the outermost braces
        candidates = [answer.strip(), *(m.strip() for m in _FENCE.findall(answer))]
        start, end = answer.find("{"), answer.rfind("}")
        if 0 <= start < end:
            candidates.append(answer[start : end + 1])
        for text in candidates:
            try:
                value = json.loads(text)
                break
            except ValueError:
                continue
        else:
            return Grade("unreadable", "the answer holds no JSON")
        try:
            for part in parts:
                value = value[int(part)] if isinstance(value, list) else value[part]
        except (LookupError, TypeError, ValueError):
            return Grade("unreadable", f"no field {spec.path!r} in the answer's JSON")
        a, b = _as_number(value), _as_number(item.expected)
        if a is not None and b is not None and not isinstance(value, str):
            ok = _close(a, b, spec)
        else:
            ok = value == item.expected
        return Grade("pass" if ok else "fail", f"{spec.path or '<root>'} = {value!r}"[:120])

    return grade


def _function(spec: GraderSpec) -> Callable[[str, EvalItem], Grade]:
    ref = spec.function or ""  # imported now, at load time, so a typo fails there
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ValueError(f"grader function {ref!r} must look like 'package.module:function'")
    try:
        fn = pkgutil.resolve_name(ref)
    except ImportError as exc:
        raise ValueError(f"grader function {ref!r}: cannot import {module_name!r}: {exc}") from None
    except AttributeError:
        raise ValueError(f"grader function {ref!r}: {module_name!r} has no {attr!r}") from None
    if not callable(fn):
        raise ValueError(f"grader function {ref!r} is not callable")

    def grade(answer: str, item: EvalItem) -> Grade:
        out = fn(answer, item)
        if out is None:
            return Grade("unreadable", "the grader returned None")
        if isinstance(out, Grade):
            return out
        if isinstance(out, bool):
            return Grade("pass" if out else "fail")
        if isinstance(out, int | float) and math.isfinite(out):
            return Grade("pass" if out >= 0.5 else "fail", f"score {out:g}")
        return Grade("unreadable", f"the grader returned {type(out).__name__}")

    return grade


_BUILDERS = dict(regex=_regex, numeric=_numeric, json_field=_json_field, function=_function)


def resolve_grader(spec: str | GraderSpec | dict[str, Any]) -> Grader:
    """A grader from ``"numeric"``, ``"pkg.mod:fn"`` or a mapping; ValueError for a bad spec."""
    if isinstance(spec, str):
        spec = {"type": "function", "function": spec} if ":" in spec else {"type": spec}
    parsed = spec if isinstance(spec, GraderSpec) else GraderSpec.model_validate(spec)
    if parsed.type == "json_field" and parsed.path is None:
        raise ValueError("a 'json_field' grader needs path: (e.g. 'answer' or 'result.0.value')")
    if parsed.pattern is not None:
        try:
            re.compile(parsed.pattern)
        except re.error as exc:
            raise ValueError(f"regex grader pattern {parsed.pattern!r}: {exc}") from None
    return Grader(parsed, _BUILDERS.get(parsed.type, _text)(parsed))
