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
# The simulator's options, nearest first: the ``sim`` marker of a test, class or module
#
#     pytestmark = pytest.mark.sim(api_key=KEY, seed=5, world={"clock": "manual"})
#
# then the ``sim_options`` fixture (a folder's conftest overrides it), then the defaults below.
# ``api_key`` is the key the simulator accepts (each folder names a recognisable canary),
# ``world`` the keywords of the ``SimulatedWorld`` built for each test (or override the
# ``sim_world`` fixture with a prepared one), ``faults`` keyword sets of ``FaultPlan.add``.
# ``make_sim(**options)`` starts more simulators the same way; all stop after the test.

#: The default key of the simulator (and of the ``resource`` fixture that talks to it).
SIM_KEY = "sk-test-CANARY-0123456789"
SIM_DEFAULTS: dict[str, Any] = {"api_key": SIM_KEY, "seed": 0, "world": None, "faults": ()}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: needs a real PostgreSQL server (started here)")
    config.addinivalue_line(
        "markers",
        "sim(api_key=, seed=, world={...}, faults=[...]): options of the `sim` fixture",
    )


# --- the order of a parallel run (pytest-xdist, as scripts/test.sh runs the suite) --------------
#
# The workers take tests one at a time (``--maxschedchunk 1``) from a list sorted longest first,
# so the long tests start at once, spread over the workers, and the short ones fill the gaps:
# the run ends soon after its longest test. The seconds are those measured one at a time on a
# 2-core machine (``pytest -m slow --durations=0``); a slow test not listed counts as ``_SLOW``,
# a fast one as 0 (collection order). They change the order only, never what runs; a single
# process keeps pytest's order (module fixtures set up once).

#: Expected seconds of the longest tests, by node id prefix.
LONGEST: dict[str, float] = {
    "tests/reliability/test_soak.py::test_soak_newest_first_list": 107,
    "tests/reliability/test_secret_hygiene.py::": 99,
    "tests/test_demo.py::test_demo_runs_the_whole_story": 97,
    "tests/reliability/test_soak.py::test_soak_oldest_first_list": 92,
    "tests/test_benchmarks_smoke.py::test_quick_benchmark_completes_with_every_row": 57,
    "tests/components/test_yaml_only_e2e.py::": 56,
    "tests/reliability/test_daemon_restarts.py::": 53,
    "tests/sensors/test_daemon_cursor.py::": 35,
    "tests/postgres/test_fresh_containers.py::": 34,
    "tests/sensors/test_idle_guard_properties.py::test_the_guard_never_stops_a_gpu_in_use": 33,
    "tests/reliability/test_soak.py::test_soak_unordered_list": 31,
    "tests/sensors/test_daemon.py::": 28,
    "tests/reliability/test_soak.py::test_slow_api_needs_several_ticks": 24,
    "tests/assets/test_spend_spans.py::test_spend_is_within_one_percent_of_the_bill": 21,
    "tests/sensors/test_daemon_resources.py::": 19,
    "tests/components/test_dg_cli.py::": 19,
    "tests/postgres/test_run_retries.py::": 18,
    "tests/sensors/test_idle_guard_properties.py::test_every_hazard_alone_in_one_world": 18,
}
_SLOW = 5.0


def _expected_seconds(item: pytest.Item) -> float:
    for prefix, seconds in LONGEST.items():
        if item.nodeid.startswith(prefix):
            return seconds
    return _SLOW if item.get_closest_marker("slow") else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts the same way
        items.sort(key=_expected_seconds, reverse=True)  # stable: ties keep collection order


@pytest.fixture
def sim_options() -> dict[str, Any]:
    """Options of every ``sim`` of a folder (override in its conftest); markers come first."""
    return {}


@pytest.fixture
def sim_world() -> "SimulatedWorld | None":
    """A prepared world for ``sim`` (None: built from the options)."""
    return None


@pytest.fixture
def make_sim(
    request: pytest.FixtureRequest, sim_options: dict[str, Any]
) -> Iterator[Callable[..., "RLSimulator"]]:
    """``make_sim(**options)``: a simulator serving on 127.0.0.1, stopped after the test."""
    from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld

    marked: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("sim"))):  # the nearest wins
        marked.update(marker.kwargs)
    defaults = {**SIM_DEFAULTS, **sim_options, **marked}
    with ExitStack() as stack:

        def make(**options: Any) -> RLSimulator:
            unknown = options.keys() - SIM_DEFAULTS.keys()
            assert not unknown, f"unknown simulator options {sorted(unknown)}"
            chosen = {**defaults, **options}
            world = chosen["world"]
            if isinstance(world, dict):
                world = SimulatedWorld(seed=chosen["seed"], **world)
            simulator = RLSimulator(api_key=chosen["api_key"], world=world, seed=chosen["seed"])
            stack.enter_context(simulator)
            for rule in chosen["faults"]:
                simulator.faults.add(**rule)
            return simulator

        yield make


@pytest.fixture
def sim(
    make_sim: Callable[..., "RLSimulator"], sim_world: "SimulatedWorld | None"
) -> "RLSimulator":
    """The test's simulator (options: the ``sim`` marker, ``sim_options``, ``sim_world``)."""
    return make_sim() if sim_world is None else make_sim(world=sim_world)


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
