"""``open_table_store``: the one way a run or a tick opens the library's tables.

The sync, the spend asset and the GPU sensors all call it with ``context.instance``, so every
table lands in one database chosen by one setting, in this order:

1. ``url`` (an asset's ``db_path`` override: builder argument or run config);
2. ``TogetherRLResource.database_url`` (e.g. ``dg.EnvVar("RL_TABLES_URL")``);
3. the ``RL_TABLES_URL`` environment variable of the process;
4. the instance's own PostgreSQL (its run storage), in the schema ``together_rl``;
5. ``<DAGSTER_HOME>/together_rl_sync.sqlite``: the laptop default.

A SQLite file is refused when the instance's run launcher starts each run in a new container
(Kubernetes, ECS, Docker, Celery-K8s, Dagster+ agents): every run would start with an empty file
and lose it at exit, so the tables would never accumulate and spend, which adds up READY time
across runs, would under-report. The check runs here, when a run or tick first opens the store,
before any connection: the definitions are loaded without an instance (a code server need not
have one) and loading them never connects to the tables' database. A literal URL of a backend
no store can use is refused earlier, when the resource is built.

Dagster glue shared by ``assets/`` and ``sensors/`` (neither imports the other).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..storage.sql import SQLAlchemyTableStore
from ..storage.urls import (
    TableStoreConfigError,
    backend_of,
    check_target,
    is_database_url,
    redact_url,
)
from .together_rl import TABLES_URL_ENV, TogetherRLResource

__all__ = [
    "DEFAULT_DB_FILENAME",
    "TABLES_SCHEMA",
    "TABLES_URL_ENV",
    "TablesTarget",
    "containerized_run_launcher",
    "db_metadata",
    "open_table_store",
    "resolve_tables_target",
]

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
    """Where the tables go for one run: ``url`` (may hold a password: never show it),
    ``schema`` and ``setting``, the configuration that chose it (named in every error)."""

    url: str
    schema: str | None
    setting: str

    def __repr__(self) -> str:

        return f"TablesTarget({redact_url(self.url)!r}, schema={self.schema!r})"


def _instance_postgres_url(instance: dg.DagsterInstance) -> str | None:
    """The URL of the instance's run storage when it is dagster-postgres', else None."""
    try:
        storage = instance.run_storage
    except Exception:
        return None
    url = getattr(storage, "postgres_url", None)
    return url if isinstance(url, str) and backend_of(url) == "postgresql" else None


def containerized_run_launcher(instance: dg.DagsterInstance) -> str | None:
    """``module.Class`` of the instance's run launcher when it starts runs in new containers.

    Read from the instance's configuration, without building the launcher (its package, e.g.
    dagster-k8s, need not be installed where this runs)."""
    name = module = None
    try:
        data = instance.get_ref().run_launcher_data
    except Exception:  # an ephemeral instance has no ref: its launcher object is all there is
        data = None
    if data is not None:
        module, name = data.module_name, data.class_name
    else:
        launcher = getattr(instance, "_run_launcher", None)
        if launcher is not None:
            module, name = type(launcher).__module__, type(launcher).__name__
    if name is None or module is None:
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
    """Where this run's tables go (see the module docstring for the order); refuses a file the
    run launcher's containers cannot keep. Connects to nothing."""
    configured = resource.tables_url() if resource is not None else None
    if url:
        target = TablesTarget(url, None, url_setting)
    elif configured is not None:
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
    """Open the library's tables for one run or tick; closed on exit.

    ``resource`` gives ``database_url`` (None: only the environment and the instance decide),
    ``instance`` is ``context.instance``, ``url`` an explicit override named ``url_setting`` in
    errors. Raises :class:`~rl_sessions_dagster.storage.TableStoreConfigError` for a setting
    that cannot work and :class:`~rl_sessions_dagster.storage.TableStoreError` when the
    database cannot be reached; neither quotes a password.
    """

    target = resolve_tables_target(resource, instance, url, url_setting=url_setting)
    store = SQLAlchemyTableStore(
        target.url, schema=target.schema, setting=target.setting, **store_options
    )
    try:
        yield store
    finally:
        store.close()


def db_metadata(display: str) -> dg.MetadataValue:
    """The ``db_path`` metadata entry: a file path, or the URL with its password masked."""

    if is_database_url(display):  # a URL has no space: after one comes e.g. "(schema x)"
        url, space, rest = display.partition(" ")
        return dg.MetadataValue.text(redact_url(url) + space + rest)
    return dg.MetadataValue.path(display)
