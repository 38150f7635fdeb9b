"""Fixtures every suite may use: one throwaway PostgreSQL server per test session.

The server starts only when a test asks for it (``pg_server``, ``pg_database``, or the
``postgres`` case of ``dagster_storage``). Without PostgreSQL binaries those tests skip with the
reason, unless ``RL_REQUIRE_POSTGRES=1`` (set by ``scripts/test.sh``, so CI fails instead).
"""

import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.pg_server import (
    PostgresServer,
    PostgresUnavailable,
    start_postgres,
)

_database_numbers = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: needs a real PostgreSQL server (started here)")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        if os.environ.get("RL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"RL_REQUIRE_POSTGRES=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_database(pg_server: PostgresServer) -> Iterator[str]:
    """A new, empty database on the session's server (its name); dropped afterwards."""
    name = pg_server.create_database(f"t{os.getpid()}_{next(_database_numbers)}")
    yield name
    pg_server.drop_database(name)


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def dagster_storage(request: pytest.FixtureRequest) -> dict[str, Any] | None:
    """The ``storage:`` section of the Dagster instance: None (SQLite) or a fresh PG database."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.dagster_storage(request.getfixturevalue("pg_database"))
