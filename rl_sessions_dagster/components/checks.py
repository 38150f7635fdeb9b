"""Checks the JSON schema cannot make, run as the definitions build, each naming its ``defs.yaml``
line; logged first, as Dagster buries every load error under its wrapper and a stack trace."""

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

import dagster as dg
from dagster_shared.yaml_utils import parse_yamls_with_source_position
from pydantic import ValidationError

from ..evaluation.dataset import DatasetError
from ..sensors.tick import CheckedSelection
from .schema import CRON_HELP, CRON_PATTERN

_S = TypeVar("_S")


def _where(folder: Path | None, path: Sequence[str | int], message: str) -> str | None:
    """``message`` as ``dg check yaml`` shows it; None unless the file has one Component."""
    file = (folder / "defs.yaml") if folder is not None and folder.is_dir() else folder
    if file is None or file.suffix not in (".yaml", ".yml") or not file.is_file():
        return None
    docs = [
        d
        for d in parse_yamls_with_source_position(file.read_text(), filename=str(file))
        if isinstance(d.value, dict)
        and str(d.value.get("type", "")).endswith("TogetherRLComponent")
    ]
    if len(docs) != 1:
        return None
    source = docs[0].source_position_tree.source_error(
        yaml_path=["attributes", *path], inline_error_message=message, value_error=False
    )
    return (
        f"{source.file_name}:{source.start_line_no} - {source.location} {message}\n{source.snippet}"
    )


def located(folder: Path | None, path: Sequence[str | int], error: Exception | str) -> Exception:
    """A load-time error at its line of ``defs.yaml`` (else at its dotted field path); an
    exception keeps its type (callers catch a ``DatasetError``), only its text changes."""
    message = str(error)
    try:
        text = _where(folder, path, message)
    except Exception:  # the position is a courtesy: never hide the error behind another one
        text = None
    text = text or ".".join(str(p) for p in ["attributes", *path]) + f": {message}"
    dg.get_dagster_logger().error(text)  # before Dagster's wrapper and its stack trace
    if isinstance(error, str):
        return dg.DagsterInvalidDefinitionError(text)
    error.args = (text,)
    return error.with_traceback(None)


@contextmanager
def located_errors(folder: Path | None, section: str, config: Any) -> Iterator[None]:
    """A section's build refusing its YAML (dataset, grader, route) raises at the field's line."""
    try:
        yield
    except DatasetError as exc:
        field = "dataset" if getattr(config, "dataset", None) else "items"
        raise located(folder, [section, field], exc) from None
    except ValidationError:
        raise
    except ValueError as exc:
        at = [section, "graders"] if str(exc).startswith("grader") else [section]
        raise located(folder, at, exc) from None


class LocatedSelection(CheckedSelection):
    """A checked selection whose refusal names the field of ``defs.yaml`` that set it."""

    def __init__(self, selection: dg.AssetSelection, folder: Path | None, path: list[str], **kw):
        super().__init__(selection, **kw)
        self.folder, self.path = folder, path

    def resolve_inner(self, asset_graph: Any, allow_missing: bool) -> Any:
        try:
            return super().resolve_inner(asset_graph, allow_missing)
        except dg.DagsterInvalidDefinitionError as exc:
            raise located(self.folder, self.path, exc) from None


def check_crons(component: Any, folder: Path | None) -> None:
    """A templated cron, once resolved, checked as ``dg check yaml`` checks a literal one."""
    for key in type(component).model_fields:
        section = getattr(component, key)
        for name in getattr(type(section), "model_fields", ()) if is_on(section) else ():
            value = getattr(section, name) if name.endswith("cron_schedule") else None
            if isinstance(value, str) and not re.fullmatch(CRON_PATTERN, value):
                raise located(folder, [key, name], f"{value!r} is not {CRON_HELP}")


def is_on(section: _S | None) -> TypeGuard[_S]:
    """A section written and not ``enabled: false``: only such a section builds anything."""
    return section is not None and getattr(section, "enabled", True)


def _names(component: Any) -> Iterator[tuple[str, str, str]]:
    """(what, name, dotted path) for each job and sensor name the YAML sets or defaults."""
    for key in ("sessions", "model_resources"):
        section = getattr(component, key)
        if is_on(section):
            yield "sensor", section.name, f"{key}.name"
            for i, route in enumerate(section.routes):
                yield "job", route.job_name, f"{key}.routes.{i}.job_name"
    for key in ("evaluation", "report"):
        section = getattr(component, key)
        if is_on(section) and section.route:
            yield "job", section.job_name, f"{key}.job_name"
    champion = component.champion
    if is_on(champion):
        yield "sensor", champion.sensor_name, "champion.sensor_name"
        if champion.on_change is not None:
            yield "job", champion.on_change.job_name, "champion.on_change.job_name"
            on_change = f"{champion.sensor_name}_on_change"
            yield "sensor", on_change, "champion.sensor_name (+ '_on_change')"
    guard = component.idle_guard
    if is_on(guard):
        yield "job", guard.name, "idle_guard.name"
        yield "sensor", f"{guard.name}_sensor", "idle_guard.name (+ '_sensor')"
    for key in ("sync", "spend"):
        section = getattr(component, key)
        if is_on(section) and getattr(section, "job_name", None):
            yield "job", section.job_name, f"{key}.job_name"


def check_unique_names(component: Any, folder: Path | None) -> None:
    """Two jobs or two sensors of one name within the Component: raise, naming both fields."""
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for what, name, path in _names(component):
        where[(what, name)].append(path)
    clashes = [(what, name, paths) for (what, name), paths in where.items() if len(paths) > 1]
    if clashes:
        first = clashes[0][2][-1].split(" ")[0]
        raise located(
            folder,
            [int(p) if p.isdigit() else p for p in first.split(".")],
            "; ".join(f"{w} name '{n}' is set by {' and '.join(p)}" for w, n, p in clashes)
            + ": give each its own name",
        )
