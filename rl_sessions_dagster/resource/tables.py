"""The one way a run or tick opens the tables: one database, one setting (order in
:func:`resolve_tables_target`); nothing connects at definitions load (no instance needed)."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from pydantic import Field

from ..storage.sql import SQLAlchemyTableStore
from ..storage.urls import (
    TableStoreConfigError,
    backend_of,
    check_target,
    is_database_url,
    redact_url,
)
from .together_rl import TABLES_URL_ENV, TogetherRLResource

DEFAULT_DB_FILENAME = "together_rl_sync.sqlite"
#: Schema of the tables in the instance's own PostgreSQL (kept apart from Dagster's tables).
TABLES_SCHEMA = "together_rl"
_SETTING_HINT = (
    f"set TogetherRLResource.database_url (e.g. dg.EnvVar('{TABLES_URL_ENV}')) or the "
    f"{TABLES_URL_ENV} environment variable"
)
#: Run launchers that start every run in a new container, by class name ...
_CONTAINER_LAUNCHERS = {
    "K8sRunLauncher",
    "CeleryK8sRunLauncher",
    "EcsRunLauncher",
    "DockerRunLauncher",
    "CeleryDockerRunLauncher",
}
#: ... or by the package that ships them (their packages are not dependencies here).
_CONTAINER_MODULES = (
    "dagster_k8s",
    "dagster_celery_k8s",
    "dagster_aws.ecs",
    "dagster_docker",
    "dagster_celery_docker",
    "dagster_cloud",
)


@dataclass(frozen=True)
class TablesTarget:
    """Where the tables go for one run; ``setting`` (what chose it) is named in every error."""

    url: str = field(repr=False)  # may hold a password: never shown
    schema: str | None
    setting: str


class TableConfig(dg.Config):
    """Run config shared by the table assets (the sync, the spend)."""

    db_path: str | None = Field(
        default=None,
        description="Where this run keeps its tables: a SQLAlchemy URL (write a password as "
        "$VAR) or a file path ($VAR and ~ expanded). Default: the asset's db_path, else the "
        f"tables' database of every asset (database_url, ${TABLES_URL_ENV}, ...).",
    )

    def override(self, default: str | None) -> tuple[str | None, str]:
        """This run's override (run config, else the builder's) and the setting it names."""
        if self.db_path:
            return self.db_path, "the run config's db_path"
        return default, "the asset's db_path"


def expand_target(url: str) -> str:
    """``$VAR`` and ``~`` expanded: run config names a URL without holding its password."""
    return url if url == ":memory:" else os.path.expanduser(os.path.expandvars(url))


def table_kinds(db_path: str | None) -> set[str]:
    """The asset's kinds: its backend when the builder fixes it, else "sql" (chosen at run time)."""
    backend = backend_of(db_path) if db_path else None
    if db_path and backend is None and "$" not in db_path:
        backend = "sqlite"  # a plain file path
    return {"together", {"postgresql": "postgres", "sqlite": "sqlite"}.get(backend or "", "sql")}


def _instance_postgres_url(instance: dg.DagsterInstance) -> str | None:
    url = getattr(instance.run_storage, "postgres_url", None)
    return url if isinstance(url, str) and backend_of(url) == "postgresql" else None


def containerized_run_launcher(instance: dg.DagsterInstance) -> str | None:
    """``module.Class`` of the instance's run launcher when it starts runs in new containers,
    read from the configuration (the launcher's package need not be installed here)."""
    try:
        data = instance.get_ref().run_launcher_data
    except Exception:  # an ephemeral instance has no ref: its launcher object is all there is
        data = None
    if data is not None:
        module, name = data.module_name, data.class_name
    elif (launcher := getattr(instance, "_run_launcher", None)) is not None:
        module, name = type(launcher).__module__, type(launcher).__name__
    else:
        return None
    if name in _CONTAINER_LAUNCHERS or module.startswith(_CONTAINER_MODULES):
        return f"{module}.{name}"
    return None


def resolve_tables_target(
    resource: TogetherRLResource | None,
    instance: dg.DagsterInstance,
    url: str | None = None,
    *,
    url_setting: str = "the asset's db_path",
) -> TablesTarget:
    """``url``, ``database_url``, ``$RL_TABLES_URL``, the instance's PostgreSQL, else a file under
    DAGSTER_HOME; a SQLite file is refused when each run starts in a new container (empty)."""
    if url:
        target = TablesTarget(expand_target(url), None, url_setting)
    elif resource is not None and (configured := resource.tables_url()) is not None:
        target = TablesTarget(configured[0], None, configured[1])
    elif (pg := _instance_postgres_url(instance)) is not None:
        target = TablesTarget(
            pg, TABLES_SCHEMA, f"the Dagster instance's storage (dagster.yaml); {_SETTING_HINT}"
        )
    else:
        target = TablesTarget(
            os.path.join(instance.root_directory, DEFAULT_DB_FILENAME),
            None,
            "the default, a file under DAGSTER_HOME (choose with TogetherRLResource.database_url "
            f"or {TABLES_URL_ENV})",
        )
    check_target(target.url, target.setting)
    backend = backend_of(target.url)
    is_file = (backend is None and target.url != ":memory:") or (
        backend == "sqlite" and target.url.split("://", 1)[1].strip("/") not in ("", ":memory:")
    )
    launcher = containerized_run_launcher(instance) if is_file else None
    if launcher is not None:
        raise TableStoreConfigError(
            f"the tables would go to a SQLite file ({target.setting}), but the instance's run "
            f"launcher {launcher} starts every run in a new container: the file would start "
            "empty and be lost after each run (sessions never accumulate, spend under-reports). "
            f"Point them at a database every run reaches: {_SETTING_HINT} to a postgresql:// "
            "URL, or leave both unset with the instance's storage on PostgreSQL (the tables "
            f"then go to its schema {TABLES_SCHEMA})."
        )
    return target


@contextmanager
def open_table_store(
    resource: TogetherRLResource | None,
    instance: dg.DagsterInstance,
    url: str | None = None,
    *,
    url_setting: str = "the asset's db_path",
    **store_options: Any,
) -> "Iterator[SQLAlchemyTableStore]":
    """The tables for one run or tick, closed on exit. ``TableStoreConfigError``: a setting that
    cannot work; ``TableStoreError``: a database out of reach; neither quotes a password."""
    target = resolve_tables_target(resource, instance, url, url_setting=url_setting)
    with SQLAlchemyTableStore(
        target.url, schema=target.schema, setting=target.setting, **store_options
    ) as store:
        yield store


def db_metadata(display: str) -> dg.MetadataValue:
    """The ``db_path`` metadata entry: a file path, or the URL with its password masked."""
    if is_database_url(display):  # a URL has no space: after one comes e.g. "(schema x)"
        url, space, rest = display.partition(" ")
        return dg.MetadataValue.text(redact_url(url) + space + rest)
    return dg.MetadataValue.path(display)
