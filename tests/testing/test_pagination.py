"""Lists: keyset pagination, limit validation, filters, order settings."""

from __future__ import annotations

import httpx
import pytest

from rl_sessions_dagster.testing import SimulatedWorld

from .conftest import RL, all_pages

RUNNING = "TRAINING_SESSION_STATUS_RUNNING"
STOPPED = "TRAINING_SESSION_STATUS_STOPPED"
ERROR = "TRAINING_SESSION_STATUS_ERROR"


def make_sessions(world: SimulatedWorld, n: int) -> list[str]:
    ids = []
    for i in range(n):
        world.advance_clock(1)
        sid = world.create_session(display_name=f"s{i}")
        if i % 3 == 1:
            world.stop_session(sid, immediate=True)
        elif i % 3 == 2:
            world.fail_session(sid)
        ids.append(sid)
    return ids


def test_sessions_every_item_once_newest_first(world: SimulatedWorld, client: httpx.Client) -> None:
    ids = make_sessions(world, 57)
    items = all_pages(client, f"{RL}/training-sessions", limit=10)
    assert [s["id"] for s in items] == ids[::-1]
    assert len(all_pages(client, f"{RL}/training-sessions", limit=100)) == 57


def test_default_limit_and_meta(world: SimulatedWorld, client: httpx.Client) -> None:
    make_sessions(world, 25)
    body = client.get(f"{RL}/training-sessions").json()
    assert len(body["data"]) == 20
    assert body["meta"] == {"limit": 20, "has_more": True, "next_cursor": body["data"][-1]["id"]}
    rest = client.get(
        f"{RL}/training-sessions", params={"after": body["meta"]["next_cursor"]}
    ).json()
    assert len(rest["data"]) == 5 and rest["meta"] == {
        "limit": 20,
        "has_more": False,
        "next_cursor": "",
    }


def test_exact_multiple_of_limit_ends_with_has_more_false(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    make_sessions(world, 20)
    body = client.get(f"{RL}/training-sessions", params={"limit": 10}).json()
    assert body["meta"]["has_more"] is True
    last = client.get(
        f"{RL}/training-sessions", params={"limit": 10, "after": body["meta"]["next_cursor"]}
    ).json()
    assert len(last["data"]) == 10 and last["meta"]["has_more"] is False


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5"])
def test_limit_out_of_range_is_400(client: httpx.Client, limit: str) -> None:
    for path in ("training-sessions", "checkpoints", "model-resources"):
        r = client.get(f"{RL}/{path}", params={"limit": limit})
        assert r.status_code == 400
        assert r.json()["error"]["param"] == "limit"
        assert r.json()["error"]["type"] == "invalid_request_error"


def test_unknown_after_is_400(client: httpx.Client) -> None:
    for path in ("training-sessions", "checkpoints", "model-resources"):
        r = client.get(f"{RL}/{path}", params={"after": "not-an-id"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "after"


def test_status_filter_comma_joined_and_repeated(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    ids = make_sessions(world, 30)
    want = {ids[i] for i in range(30) if i % 3 in (1, 2)}
    comma = all_pages(client, f"{RL}/training-sessions", status=f"{STOPPED},{ERROR}", limit=7)
    assert {s["id"] for s in comma} == want and len(comma) == len(want)
    assert [s["id"] for s in comma] == [i for i in ids[::-1] if i in want]
    repeated = client.get(
        f"{RL}/training-sessions", params=[("status", STOPPED), ("status", ERROR), ("limit", "100")]
    ).json()["data"]
    assert [s["id"] for s in repeated] == [s["id"] for s in comma]
    running = all_pages(client, f"{RL}/training-sessions", status=RUNNING)
    assert {s["status"] for s in running} == {RUNNING} and len(running) == 10


def test_unknown_status_filter_is_400(client: httpx.Client) -> None:
    for value in (
        "TRAINING_SESSION_STATUS_PAUSED",
        "RUNNING",
        "TRAINING_SESSION_STATUS_UNSPECIFIED",
    ):
        r = client.get(f"{RL}/training-sessions", params={"status": value})
        assert r.status_code == 400 and r.json()["error"]["param"] == "status"
    r = client.get(f"{RL}/model-resources", params={"status": RUNNING})
    assert r.status_code == 400


def test_model_resource_and_created_by_filters(world: SimulatedWorld, client: httpx.Client) -> None:
    rid = world.create_model_resource()
    mine = [world.create_session(rid) for _ in range(3)]
    world.advance_clock(1)
    theirs = world.create_session(rid, created_by="user_other")
    elsewhere = world.create_session()
    by_resource = all_pages(client, f"{RL}/training-sessions", model_resources_id=rid, limit=2)
    assert {s["id"] for s in by_resource} == {*mine, theirs}
    assert by_resource[0]["id"] == theirs  # newest first within the filter too
    me = all_pages(client, f"{RL}/training-sessions", created_by="me")
    assert {s["id"] for s in me} == {*mine, elsewhere}
    other = all_pages(client, f"{RL}/training-sessions", created_by="user_other")
    assert [s["id"] for s in other] == [theirs]
    world.stop_session(mine[0], immediate=True)
    stopped = all_pages(client, f"{RL}/training-sessions", model_resources_id=rid, status=STOPPED)
    assert [s["id"] for s in stopped] == [mine[0]]
    assert all_pages(client, f"{RL}/training-sessions", model_resources_id="unknown") == []


def test_cursor_survives_inserts_and_status_changes(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    ids = make_sessions(world, 10)
    first = client.get(f"{RL}/training-sessions", params={"limit": 4}).json()
    world.advance_clock(1)
    world.create_session()  # newer: before the cursor, never shows up later
    world.stop_session(ids[0], immediate=True)
    rest = all_pages(client, f"{RL}/training-sessions", limit=4, after=first["meta"]["next_cursor"])
    assert [s["id"] for s in first["data"] + rest] == ids[::-1]


def test_unordered_sessions(world: SimulatedWorld, client: httpx.Client) -> None:
    ids = make_sessions(world, 40)
    world.set_list_order("unordered")
    items = all_pages(client, f"{RL}/training-sessions", limit=6)
    got = [s["id"] for s in items]
    assert sorted(got) == sorted(ids) and len(got) == 40
    assert got != ids[::-1] and got != ids
    assert got == [s["id"] for s in all_pages(client, f"{RL}/training-sessions", limit=100)]
    created = [s["created_at"] for s in items]
    assert created != sorted(created, reverse=True)
    stopped = all_pages(client, f"{RL}/training-sessions", status=STOPPED, limit=3)
    assert [s["id"] for s in stopped] == [i for i in got if i in {ids[k] for k in range(1, 40, 3)}]
    world.set_list_order("newest_first")
    assert [s["id"] for s in all_pages(client, f"{RL}/training-sessions")] == ids[::-1]


def test_unordered_as_constructor_setting() -> None:
    world = SimulatedWorld(seed=1, clock="manual", list_order="unordered")
    ids = [world.create_session() for _ in range(20)]
    assert sorted(world.session_ids()) == sorted(ids) and world.list_order == "unordered"
    with pytest.raises(ValueError):
        SimulatedWorld(list_order="random")  # type: ignore[arg-type]


def test_checkpoints_newest_first_with_filters(world: SimulatedWorld, client: httpx.Client) -> None:
    a = world.create_session()
    b = world.create_session(base_model="Qwen/Qwen3.5-4B")
    made = []
    for i in range(30):
        world.advance_clock(1)
        sid = a if i % 2 else b
        made.append(
            world.add_training_checkpoint(sid)
            if i % 5 == 0
            else world.add_inference_checkpoint(sid)
        )
    items = all_pages(client, f"{RL}/checkpoints", limit=7)
    assert [c["id"] for c in items] == made[::-1]
    only_a = all_pages(client, f"{RL}/checkpoints", session_id=a, limit=4)
    assert [c["id"] for c in only_a] == [c for i, c in enumerate(made) if i % 2][::-1]
    training = all_pages(client, f"{RL}/checkpoints", type="CHECKPOINT_TYPE_TRAINING")
    assert [c["id"] for c in training] == [made[i] for i in range(0, 30, 5)][::-1]
    a_inf = all_pages(client, f"{RL}/checkpoints", session_id=a, type="CHECKPOINT_TYPE_INFERENCE")
    assert all(c["session_id"] == a and c["type"] == "CHECKPOINT_TYPE_INFERENCE" for c in a_inf)
    qwen35 = all_pages(client, f"{RL}/checkpoints", base_model="Qwen/Qwen3.5-4B", limit=3)
    assert {c["session_id"] for c in qwen35} == {b} and len(qwen35) == 15
    assert client.get(f"{RL}/checkpoints", params={"type": "BOGUS"}).status_code == 400


def test_checkpoints_same_timestamp_tie_break_by_id_desc(world: SimulatedWorld) -> None:
    sid = world.create_session()
    made = [world.add_inference_checkpoint(sid) for _ in range(5)]
    assert [c["id"] for c in world.checkpoints()] == sorted(made, reverse=True)


def test_model_resources_pagination_and_filters(
    world: SimulatedWorld, client: httpx.Client
) -> None:
    rids = []
    for i in range(12):
        world.advance_clock(1)
        rids.append(world.create_model_resource(created_by="user_x" if i == 0 else None))
    world.stop_model_resource(rids[3])
    items = all_pages(client, f"{RL}/model-resources", limit=5)
    assert [r["id"] for r in items] == rids[::-1]
    stopped = all_pages(client, f"{RL}/model-resources", status="MODEL_RESOURCES_STATUS_STOPPED")
    assert [r["id"] for r in stopped] == [rids[3]]
    assert [r["id"] for r in all_pages(client, f"{RL}/model-resources", created_by="user_x")] == [
        rids[0]
    ]
    assert len(all_pages(client, f"{RL}/model-resources", created_by="me")) == 11
