"""Checks across the sections of ``TogetherRLComponent`` that its JSON schema cannot make: run
when the definitions build, so ``dg check defs`` names the dotted fields at fault before
Dagster refuses the merged definitions with a stack trace of its own."""

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import dagster as dg

__all__ = ["check_unique_names"]


def _on(section: Any) -> bool:
    return section is not None and getattr(section, "enabled", True)


def _names(component: Any) -> Iterator[tuple[str, str, str]]:
    """(what, name, dotted path) for each job and sensor name the YAML sets or defaults."""
    for key in ("sessions", "model_resources"):
        section = getattr(component, key)
        if _on(section):
            yield "sensor", section.name, f"{key}.name"
            for i, route in enumerate(section.routes):
                yield "job", route.job_name, f"{key}.routes.{i}.job_name"
    evaluation = component.evaluation
    if _on(evaluation) and evaluation.route:
        yield "job", evaluation.job_name, "evaluation.job_name"
    report = component.report
    if _on(report) and report.route:
        yield "job", report.job_name, "report.job_name"
    champion = component.champion
    if _on(champion):
        yield "sensor", champion.sensor_name, "champion.sensor_name"
        if champion.on_change is not None:
            yield "job", champion.on_change.job_name, "champion.on_change.job_name"
    guard = component.idle_guard
    if _on(guard):
        yield "job", guard.name, "idle_guard.name"
        yield "sensor", f"{guard.name}_sensor", "idle_guard.name (+ '_sensor')"
    for key in ("sync", "spend"):
        section = getattr(component, key)
        if _on(section) and getattr(section, "job_name", None):
            yield "job", section.job_name, f"{key}.job_name"


def check_unique_names(component: Any) -> None:
    """Two jobs or two sensors of one name within the Component: raise, naming both fields."""
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for what, name, path in _names(component):
        where[(what, name)].append(path)
    clashes = [
        f"{what} name '{name}' is set by {' and '.join(paths)}"
        for (what, name), paths in where.items()
        if len(paths) > 1
    ]
    if clashes:
        raise dg.DagsterInvalidDefinitionError(
            "TogetherRLComponent (defs.yaml): " + "; ".join(clashes) + ": give each its own name"
        )
