"""Evaluation datasets: items of chat messages, each with its ``expected`` answer. Validated whole
when the definitions load, so a bad file fails ``dg check defs`` naming the line, not a run."""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Dataset", "DatasetError", "EvalItem", "item_error", "load_dataset"]

RESERVED = frozenset({"id", "messages", "prompt", "expected"})


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names the source and the line (or item)."""

    def __init__(self, message: str, *, source: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"evaluation dataset {where}: {message}")
        self.source = source
        self.line = line


@dataclass(frozen=True)
class EvalItem:
    """One question. ``fields`` holds the item's other keys (template values, grader hints);
    ``line`` is its line in the JSONL file (1-based) or its position in an inline list."""

    id: str
    messages: tuple[Mapping[str, str], ...]
    expected: Any
    fields: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None

    @property
    def prompt(self) -> str:
        """The last user message: what a person reading a failure wants to see."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return m.get("content", "")
        return self.messages[-1].get("content", "") if self.messages else ""


@dataclass(frozen=True)
class Dataset:
    """Items, their source and a digest, recorded so only scores on the same questions compare."""

    items: tuple[EvalItem, ...]
    source: str
    digest: str

    def __len__(self) -> int:
        return len(self.items)


def _template_fields(template: str) -> list[str]:
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name]
    except ValueError as exc:
        raise ValueError(f"prompt_template is not a valid format string: {exc}") from None


def _messages(raw: Any) -> tuple[dict[str, str], ...]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ValueError(f"messages[{i}] must be an object with a string 'role'")
        if not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must have a string 'content'")
        out.append({"role": m["role"], "content": m["content"]})
    return tuple(out)


def _item(raw: Any, line: int, template: str | None, system_prompt: str | None) -> EvalItem:
    """One item from its JSON object; ValueError says what is wrong (the caller adds where)."""
    if not isinstance(raw, dict):
        raise ValueError(f"an item must be a JSON object, not {type(raw).__name__}")
    if "expected" not in raw:
        raise ValueError("missing 'expected' (the answer to grade against)")
    fields = {k: v for k, v in raw.items() if k not in RESERVED}
    if "messages" in raw and "prompt" in raw:
        raise ValueError("give 'messages' or 'prompt', not both")
    if "messages" in raw:
        messages = _messages(raw["messages"])
    elif "prompt" in raw:
        if not isinstance(raw["prompt"], str) or not raw["prompt"]:
            raise ValueError("'prompt' must be a non-empty string")
        messages = ({"role": "user", "content": raw["prompt"]},)
    elif template is not None:
        missing = [n for n in _template_fields(template) if n not in fields]
        if missing:
            raise ValueError(f"prompt_template needs field(s) {missing} that the item lacks")
        try:
            text = template.format_map(fields)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise ValueError(f"prompt_template cannot be filled: {exc!r}") from None
        messages = ({"role": "user", "content": text},)
    else:
        raise ValueError("no 'messages' or 'prompt', and the dataset has no prompt_template")
    if system_prompt and not any(m["role"] == "system" for m in messages):
        messages = ({"role": "system", "content": system_prompt}, *messages)
    item_id = raw.get("id", str(line))
    if not isinstance(item_id, str | int) or isinstance(item_id, bool) or item_id == "":
        raise ValueError("'id' must be a non-empty string or an integer")
    return EvalItem(str(item_id), messages, raw["expected"], fields, line)


def _digest(items: Iterable[EvalItem]) -> str:
    h = hashlib.sha256()
    for it in items:
        doc = [it.id, list(it.messages), it.expected, dict(it.fields)]
        h.update(json.dumps(doc, sort_keys=True, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _read_jsonl(path: Path, shown: str) -> list[tuple[int, Any]]:
    if not path.is_file():
        raise DatasetError("file not found" if not path.exists() else "not a file", source=shown)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot be read: {exc}", source=shown) from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"invalid JSON ({exc.msg}, column {exc.colno})", source=shown, line=number
            ) from None
    return rows


def item_error(message: str, source: str, number: int, inline: bool) -> DatasetError:
    """A problem of the item at ``number``: a file's line, or an inline item's position."""
    if inline:
        return DatasetError(f"item {number}: {message}", source=source)
    return DatasetError(message, source=source, line=number)


def load_dataset(
    path: str | Path | None = None,
    items: Sequence[Mapping[str, Any]] | None = None,
    *,
    prompt_template: str | None = None,
    system_prompt: str | None = None,
    base_dir: str | Path | None = None,
) -> Dataset:
    """Validate a JSONL file (``path``, from ``base_dir``) or inline ``items``: exactly one."""
    if (path is None) == (items is None):
        raise DatasetError("give exactly one of a file path or inline items", source="dataset")
    if prompt_template is not None:
        _template_fields(prompt_template)  # a bad template fails once, not once per item
    inline = path is None
    shown = "inline items" if inline else str(path)
    if inline:
        rows = list(enumerate(items or [], 1))
    else:
        rows = _read_jsonl(Path(base_dir or "") / str(path), shown)
    label = "item" if inline else "line"
    out: list[EvalItem] = []
    seen: dict[str, int] = {}
    for number, raw in rows:
        try:
            item = _item(raw, number, prompt_template, system_prompt)
        except ValueError as exc:
            raise item_error(str(exc), shown, number, inline) from None
        if item.id in seen:
            message = f"duplicate id {item.id!r} (first at {label} {seen[item.id]})"
            raise DatasetError(message, source=shown, line=None if inline else number)
        seen[item.id] = number
        out.append(item)
    if not out:
        raise DatasetError("no items", source=shown)
    return Dataset(tuple(out), shown, _digest(out))
