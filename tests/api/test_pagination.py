"""Auto-pagination: every item exactly once, pages fetched lazily, filters on every page.

One simulator with 10,000 sessions is shared by the module (populating takes ~0.2 s, paging
through it ~0.6 s); each test gets a fresh client and a reset request log.
"""

from __future__ import annotations

import gc
import itertools
import math
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from rl_sessions_dagster.api import RetryPolicy, RLSessionsClient, SessionStatus
from rl_sessions_dagster.api.enums import CheckpointType
from rl_sessions_dagster.api.errors import BadRequestError, DecodeError
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY

N_SESSIONS = 10_000
SESSIONS = "/v1/rl/training-sessions"


@pytest.fixture(scope="module")
def big_sim() -> Iterator[RLSimulator]:
    with RLSimulator(api_key=KEY, seed=1) as sim:
        sim.world.populate(N_SESSIONS, checkpoints_per_session=1, active=50)
        yield sim


@pytest.fixture
def sim(big_sim: RLSimulator) -> Iterator[RLSimulator]:
    big_sim.requests.reset()
    big_sim.faults.clear()
    yield big_sim
    big_sim.world.response_hook = None
    big_sim.world.set_list_order("newest_first")


@pytest.fixture
def client(sim: RLSimulator) -> Iterator[RLSessionsClient]:
    policy = RetryPolicy(sleep=lambda _: None)
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=policy) as c:
        yield c


def test_ten_thousand_sessions_in_one_hundred_pages(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    ids = [s.id for s in client.list_sessions(page_size=100)]
    assert len(ids) == N_SESSIONS and len(set(ids)) == N_SESSIONS
    assert set(ids) == set(sim.world.session_ids())
    records = sim.requests.records("GET", SESSIONS)
    assert len(records) == client.stats.requests == 100
    assert all(r.param("limit") == "100" for r in records)
    # Each request continues after the last id of the page before it.
    assert [r.param("after") for r in records] == [None, *ids[99:-1:100]]


def test_pages_are_fetched_lazily_one_at_a_time(client: RLSessionsClient) -> None:
    sessions = client.list_sessions(page_size=50)
    assert client.stats.requests == 0  # nothing is sent before the first next()
    first = next(sessions)
    assert client.stats.requests == 1
    rest_of_page = list(itertools.islice(sessions, 49))
    assert client.stats.requests == 1 and len(rest_of_page) == 49
    probe = weakref.ref(first)
    del first, rest_of_page
    next(sessions)  # crosses into page 2
    assert client.stats.requests == 2
    gc.collect()
    assert probe() is None  # page 1 is no longer held by the iterator
    sessions.close()  # type: ignore[attr-defined]
    assert client.stats.requests == 2


def test_status_filter_is_one_comma_joined_value_on_every_page(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    wanted = [SessionStatus.RUNNING, "stopped", "TRAINING_SESSION_STATUS_ERROR", "RUNNING"]
    got = list(client.list_sessions(status=wanted, page_size=100))
    expected = sim.world.session_ids(
        ["TRAINING_SESSION_STATUS_RUNNING", "TRAINING_SESSION_STATUS_STOPPED",
         "TRAINING_SESSION_STATUS_ERROR"]
    )  # fmt: skip
    assert sorted(s.id for s in got) == sorted(expected)
    assert {s.status for s in got} <= {
        SessionStatus.RUNNING,
        SessionStatus.STOPPED,
        SessionStatus.ERROR,
    }
    records = sim.requests.records("GET", SESSIONS)
    assert len(records) == math.ceil(len(expected) / 100) > 1
    for record in records:
        assert record.query["status"] == [
            "TRAINING_SESSION_STATUS_RUNNING,TRAINING_SESSION_STATUS_STOPPED,"
            "TRAINING_SESSION_STATUS_ERROR"
        ]


def test_resource_and_creator_filters(sim: RLSimulator, client: RLSessionsClient) -> None:
    some = sim.world.sessions()[0]
    by_resource = list(client.list_sessions(model_resources_id=some["model_resources_id"]))
    assert some["id"] in {s.id for s in by_resource}
    assert {s.model_resources_id for s in by_resource} == {some["model_resources_id"]}
    mine = client.list_sessions_page(created_by="me", limit=5, status="EXPIRED")
    assert all(s.status is SessionStatus.EXPIRED for s in mine.data)
    last = sim.requests.last("GET", SESSIONS)
    assert last is not None and last.param("created_by") == "me"


def test_manual_paging_with_next_cursor(client: RLSessionsClient) -> None:
    seen: list[str] = []
    page = client.list_sessions_page(limit=100, status="RUNNING")
    while True:
        seen += [s.id for s in page.data]
        if page.next_cursor is None:
            break
        page = client.list_sessions_page(after=page.next_cursor, limit=100, status="RUNNING")
    assert len(seen) == len(set(seen)) == 50  # populate(active=50)


def test_unordered_lists_still_yield_every_id_once(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sim.world.set_list_order("unordered")
    ids = [s.id for s in client.list_sessions(page_size=100)]
    assert len(ids) == len(set(ids)) == N_SESSIONS


def test_checkpoints_newest_first_with_filters(sim: RLSimulator, client: RLSessionsClient) -> None:
    inference = list(client.list_checkpoints(type="inference", page_size=100))
    assert inference and {c.type for c in inference} == {CheckpointType.INFERENCE}
    assert len(inference) == sim.world.counts()["checkpoints_by_type"]["CHECKPOINT_TYPE_INFERENCE"]
    created = [c.created_at for c in inference]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(created))
    assert (
        sim.requests.last("GET", "/v1/rl/checkpoints").param("type") == "CHECKPOINT_TYPE_INFERENCE"
    )  # type: ignore[union-attr]
    session_id = inference[0].session_id
    assert session_id is not None
    own = list(client.list_checkpoints(session_id=session_id))
    assert own and {c.session_id for c in own} == {session_id}


def test_model_resources_across_small_pages(sim: RLSimulator, client: RLSessionsClient) -> None:
    total = sim.world.counts()["model_resources"]
    ids = [r.id for r in client.list_model_resources(page_size=7)]
    assert len(ids) == len(set(ids)) == total
    assert client.stats.requests == math.ceil(total / 7)


@pytest.mark.parametrize("bad", [0, 101, -1, True, 1.5, "100"])
def test_page_size_is_checked_before_any_request(client: RLSessionsClient, bad: Any) -> None:
    with pytest.raises(ValueError, match="between 1 and 100"):
        client.list_sessions(page_size=bad)
    with pytest.raises(ValueError, match="between 1 and 100"):
        client.list_checkpoints_page(limit=bad)
    assert client.stats.requests == 0


@pytest.mark.parametrize("bad", ["RUNING", "UNSPECIFIED", SessionStatus.UNKNOWN, []])
def test_bad_status_filters_fail_fast(client: RLSessionsClient, bad: Any) -> None:
    with pytest.raises(ValueError, match="status"):
        client.list_sessions(status=bad)
    assert client.stats.requests == 0


def test_a_status_newer_than_the_library_is_passed_through(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    with pytest.raises(BadRequestError):  # the simulator does not know it either
        client.list_sessions_page(status="TRAINING_SESSION_STATUS_PAUSED")
    last = sim.requests.last("GET", SESSIONS)
    assert last is not None and last.param("status") == "TRAINING_SESSION_STATUS_PAUSED"
    assert client.stats.requests == 1  # a 400 is not retried


def test_a_cursor_that_does_not_advance_is_an_error_not_a_loop(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    stuck_at = sim.world.session_ids()[5]  # a real id: the simulator rejects unknown cursors

    def stuck(path: str, payload: Any) -> Any:
        if path == SESSIONS:
            payload["meta"] = {"has_more": True, "next_cursor": stuck_at}
        return payload

    sim.world.response_hook = stuck
    with pytest.raises(DecodeError, match="cursor did not advance"):
        list(client.list_sessions(page_size=10))
    assert client.stats.requests == 2


def test_has_more_without_a_cursor_continues_after_the_last_id(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    def no_cursor(path: str, payload: Any) -> Any:
        if path == SESSIONS:
            payload.get("meta", {}).pop("next_cursor", None)
        return payload

    sim.world.response_hook = no_cursor
    ids = [s.id for s in client.list_sessions(status="RUNNING", page_size=20)]
    assert len(ids) == len(set(ids)) == 50
