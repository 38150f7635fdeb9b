"""Drift tolerance of list pages: one unreadable item costs that item, never the page.

Over HTTP to the simulator: ``mutate_session_json`` breaks a session's JSON, and the world's
``response_hook`` (``(path, payload) -> payload``) rewrites checkpoint and model-resource pages
the way a drifted API would. The unit tests after them pin :func:`salvage` and
:func:`skipped_item` on shapes the simulator never sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pydantic
import pytest

from rl_sessions_dagster.api import (
    Checkpoint,
    ModelResource,
    Page,
    RetryPolicy,
    RLSessionsClient,
    TrainingSession,
)
from rl_sessions_dagster.api.errors import DecodeError
from rl_sessions_dagster.api.pages import (
    REASON_CHARS,
    SkippedItem,
    parse_page,
    salvage,
    skipped_item,
)
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY

SESSIONS = "/v1/rl/training-sessions"
CHECKPOINTS = "/v1/rl/checkpoints"
RESOURCES = "/v1/rl/model-resources"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"api_key": KEY, "seed": 3}


@pytest.fixture
def client(sim: RLSimulator) -> Iterator[RLSessionsClient]:
    with RLSessionsClient(KEY, base_url=sim.base_url, retry=RetryPolicy(max_attempts=1)) as c:
        yield c


def _hook_items(path_prefix: str, edit: Any) -> Any:
    """A response hook that applies ``edit(items)`` to the ``data`` of pages under a path."""

    def hook(path: str, payload: Any) -> Any:
        if path.startswith(path_prefix) and isinstance(payload, dict) and "data" in payload:
            payload["data"] = edit(payload["data"])
        return payload

    return hook


# -- sessions ----------------------------------------------------------------------------------


def test_a_session_without_id_is_skipped_and_its_page_neighbours_kept(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sim.world.populate(30, 1, active=2)
    ids = sim.world.session_ids()
    sim.world.mutate_session_json(ids[4], drop=("id",))
    sim.world.mutate_session_json(ids[7], extra={"id": 31337})
    page = client.list_sessions_page(limit=10)
    assert [s.id for s in page.data] == [i for i in ids[:10] if i not in (ids[4], ids[7])]
    assert page.skipped == [
        SkippedItem(id=None, field="id", reason="Field required"),
        SkippedItem(id="31337", field="id", reason="Input should be a valid string"),
    ]
    assert page.next_cursor is not None  # paging goes on past the bad items
    assert client.stats.skipped_items == 2
    assert "skipped" not in page.model_dump()  # client-side information, not wire data


def test_iterators_yield_good_items_and_report_each_skipped_one(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sim.world.populate(250, 1, active=2)
    ids = sim.world.session_ids()
    bad = [ids[0], ids[150], ids[249]]  # first, middle and last page
    for sid in bad:
        sim.world.mutate_session_json(sid, extra={"id": None})
    seen: list[SkippedItem] = []
    got = [s.id for s in client.list_sessions(page_size=100, on_skipped=seen.append)]
    assert got == [i for i in ids if i not in bad]
    assert [s.field for s in seen] == ["id"] * 3 and client.stats.skipped_items == 3
    assert sim.requests.count("GET", SESSIONS) == 3


def test_an_unparseable_optional_field_is_none_with_the_raw_value_kept(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    sim.world.add_inference_checkpoint(sid)
    sim.world.mutate_session_json(sid, extra={"updated_at": "not-a-date", "step": "twelve"})
    (session,) = client.list_sessions()
    assert session.id == sid and session.updated_at is None and session.step is None
    assert session.created_at is not None and len(session.inference_checkpoints) == 1
    assert session.invalid_fields == {"updated_at": "not-a-date", "step": "twelve"}
    assert client.stats.skipped_items == 0 and client.stats.repaired_items == 1
    # A single GET is read the same way instead of failing.
    one = client.get_session(sid)
    assert one.updated_at is None and one.invalid_fields == session.invalid_fields


def test_a_bad_embedded_checkpoint_costs_only_its_own_field_or_entry(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    for _ in range(3):
        sim.world.add_inference_checkpoint(sid)
    raw = sim.world.session(sid)["inference_checkpoints"]
    raw[0]["created_at"] = "yesterday"
    del raw[1]["id"]
    sim.world.mutate_session_json(sid, extra={"inference_checkpoints": raw})
    (session,) = client.list_sessions()
    kept = session.inference_checkpoints
    assert [c.id for c in kept] == [raw[0]["id"], raw[2]["id"]]
    assert kept[0].created_at is None and kept[1].created_at is not None
    assert session.invalid_fields is not None
    assert session.invalid_fields["inference_checkpoints.0.created_at"] == "yesterday"
    assert session.invalid_fields["inference_checkpoints.1"]["step"] == raw[1]["step"]


def test_a_well_formed_page_takes_the_fast_path(sim: RLSimulator, client: RLSessionsClient) -> None:
    sim.world.populate(20, 2, active=2)
    page = client.list_sessions_page(limit=20)
    assert len(page.data) == 20 and page.skipped == []
    assert all(s.invalid_fields is None for s in page.data)
    assert client.stats.repaired_items == 0 and client.stats.skipped_items == 0


def test_a_page_whose_envelope_is_broken_is_still_a_decode_error(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sim.world.populate(3, 0)
    sim.world.response_hook = lambda path, payload: {**payload, "data": "not a list"}
    with pytest.raises(DecodeError, match="valid Page"):
        client.list_sessions_page()


# -- checkpoints and model resources -------------------------------------------------------------


def test_checkpoint_pages_skip_unreadable_items_and_repair_bad_dates(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    sid = sim.world.create_session()
    for _ in range(4):
        sim.world.add_inference_checkpoint(sid)

    def edit(items: list[dict[str, Any]]) -> list[Any]:
        items[0]["created_at"] = "not-a-date"
        items[1]["id"] = ["x"]
        return [*items, "garbage"]

    sim.world.response_hook = _hook_items(CHECKPOINTS, edit)
    page = client.list_checkpoints_page(session_id=sid)
    assert len(page.data) == 3 and all(isinstance(c, Checkpoint) for c in page.data)
    assert page.data[0].created_at is None
    assert page.data[0].invalid_fields == {"created_at": "not-a-date"}
    assert [(s.id, s.field) for s in page.skipped] == [(None, "id"), (None, "")]
    seen: list[SkippedItem] = []
    assert len(list(client.list_checkpoints(session_id=sid, on_skipped=seen.append))) == 3
    assert len(seen) == 2


def test_model_resource_pages_skip_unreadable_items(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    for _ in range(3):
        sim.world.create_model_resource()

    def edit(items: list[dict[str, Any]]) -> list[Any]:
        items[1].pop("id")
        items[2]["expires_at"] = 12.5e99  # not a timestamp any parser takes
        items[2]["inactive_timeout"] = "one hour"
        return items

    sim.world.response_hook = _hook_items(RESOURCES, edit)
    seen: list[SkippedItem] = []
    resources = list(client.list_model_resources(on_skipped=seen.append))
    assert len(resources) == 2 and all(isinstance(r, ModelResource) for r in resources)
    assert resources[1].inactive_timeout is None and resources[1].invalid_fields is not None
    assert resources[1].invalid_fields["inactive_timeout"] == "one hour"
    assert seen == [SkippedItem(id=None, field="id", reason="Field required")]


# -- units: salvage and skipped_item -------------------------------------------------------------


def test_salvage_widens_a_required_field_to_its_item() -> None:
    instance, error = salvage(TrainingSession, {"id": 5, "step": "x"})
    assert instance is None and error is not None
    assert skipped_item({"id": 5}, error).field == "id"
    instance, error = salvage(TrainingSession, {"id": "s", "step": "x", "metadata": 3})
    assert instance is not None and error is None
    assert instance.invalid_fields == {"step": "x", "metadata": 3}


def test_salvage_does_not_touch_its_input() -> None:
    raw = {"id": "s", "created_at": "nope", "inference_checkpoints": [{"step": 1}]}
    copy = json.loads(json.dumps(raw))
    instance, _ = salvage(TrainingSession, raw)
    assert instance is not None and instance.inference_checkpoints == [] and raw == copy


def test_salvage_handles_union_locations() -> None:
    class Flex(pydantic.BaseModel):
        id: str
        seed: int | str | None = None
        invalid_fields: dict[str, Any] | None = None

    instance, _ = salvage(Flex, {"id": "a", "seed": [1, 2]})
    assert instance is not None and instance.seed is None
    assert instance.invalid_fields == {"seed": [1, 2]}


def test_skipped_reasons_are_scrubbed_and_capped() -> None:
    secret = "sk-live-REASON-secret-0001"

    class Strict(pydantic.BaseModel):
        id: str
        mode: Literal["sk-live-REASON-secret-0001", "b"]

    with pytest.raises(pydantic.ValidationError) as info:
        Strict.model_validate({"id": "x", "mode": "z"})
    item = skipped_item({"id": "x"}, info.value, [secret])
    assert secret not in item.reason and "***" in item.reason and item.field == "mode"

    class Long(pydantic.BaseModel):
        id: str
        mode: Literal[tuple(f"value-{i:04d}" for i in range(100))]  # type: ignore[valid-type]

    with pytest.raises(pydantic.ValidationError) as info:
        Long.model_validate({"id": "x", "mode": "z"})
    assert len(skipped_item({"id": "x"}, info.value).reason) == REASON_CHARS


def test_parse_page_keeps_meta_even_when_it_is_partly_bad() -> None:
    body = {"data": [{"id": "a"}, {}], "meta": {"has_more": True, "next_cursor": "a", "limit": "x"}}
    page = parse_page(Page[TrainingSession], json.dumps(body).encode())
    assert page is not None and [s.id for s in page.data] == ["a"]
    assert page.next_cursor == "a" and page.meta.limit is None and len(page.skipped) == 1
    assert parse_page(Page[TrainingSession], b"[1, 2]") is None
    assert parse_page(Page[TrainingSession], b'{"data": [], "meta": "next"}') is None
    assert parse_page(TrainingSession, b"{}") is None  # type: ignore[arg-type]
