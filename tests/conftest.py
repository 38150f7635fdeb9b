"""Fixtures every suite may use: a simulator, a Dagster instance, a resource, and one throwaway
PostgreSQL server per test session.

The server starts only when a test asks for it (``pg_server``, ``pg_database``, or the
``postgres`` case of ``dagster_storage``). Without PostgreSQL binaries those tests skip with the
reason, unless ``RL_REQUIRE_POSTGRES=1`` (set by ``scripts/test.sh``, so CI fails instead).
"""

import itertools
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import pytest

from tests.pg_server import (
    PostgresServer,
    PostgresUnavailable,
    start_postgres,
)

if TYPE_CHECKING:
    import dagster as dg

    from rl_sessions_dagster import TogetherRLResource
    from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

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


# --- the simulator, a Dagster instance and a resource: one definition each -----------------------
#
# Knobs are fixtures, overridden the pytest way (in a folder's conftest or a test module):
#
#     @pytest.fixture
#     def sim_seed() -> int:
#         return 7
#
# ``sim_key`` (the API key the simulator accepts; every folder uses a recognisable canary),
# ``sim_seed``, ``sim_world`` (a prepared ``SimulatedWorld``, e.g. a manual clock; None builds
# one from the seed), ``sim_faults`` (``FaultPlan.add`` keyword sets applied before the test) and
# ``resource_options`` (keywords of ``TogetherRLResource``). ``make_sim`` starts more simulators
# with the same knobs (stopped after the test).

#: The default key; a folder or module overrides ``sim_key`` with its own canary.
SIM_KEY = "sk-test-CANARY-0123456789"


@pytest.fixture
def sim_key() -> str:
    return SIM_KEY


@pytest.fixture
def sim_seed() -> int:
    return 0


@pytest.fixture
def sim_world() -> "SimulatedWorld | None":
    return None


@pytest.fixture
def sim_faults() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def make_sim(
    sim_key: str,
    sim_seed: int,
    sim_world: "SimulatedWorld | None",
    sim_faults: list[dict[str, Any]],
) -> Iterator[Callable[..., "RLSimulator"]]:
    """``make_sim(**overrides)``: a running simulator (``api_key``, ``world``, ``seed``, ``faults``
    default to the knobs), stopped after the test."""
    from rl_sessions_dagster.testing import RLSimulator

    with ExitStack() as stack:

        def make(
            *,
            api_key: str | None = None,
            world: "SimulatedWorld | None" = None,
            seed: int | None = None,
            faults: list[dict[str, Any]] | None = None,
        ) -> RLSimulator:
            simulator = RLSimulator(
                api_key=sim_key if api_key is None else api_key,
                world=world,
                seed=sim_seed if seed is None else seed,
            )
            stack.enter_context(simulator)
            for rule in sim_faults if faults is None else faults:
                simulator.faults.add(**rule)
            return simulator

        yield make


@pytest.fixture
def sim(
    make_sim: Callable[..., "RLSimulator"], sim_world: "SimulatedWorld | None"
) -> "RLSimulator":
    """A simulator serving on 127.0.0.1 for the test (its knobs: ``sim_key``, ``sim_seed``,
    ``sim_world``, ``sim_faults``)."""
    return make_sim(world=sim_world)


@pytest.fixture
def instance() -> "Iterator[dg.DagsterInstance]":
    """A real, throwaway DagsterInstance."""
    import dagster as dg

    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def resource_options() -> dict[str, Any]:
    return {}


@pytest.fixture
def resource(sim: "RLSimulator", resource_options: dict[str, Any]) -> "TogetherRLResource":
    """``TogetherRLResource`` pointed at ``sim`` with its key (options: ``resource_options``)."""
    from tests.support import sim_resource

    return sim_resource(sim, **resource_options)
