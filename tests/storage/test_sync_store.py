"""The sync table store: row mapping, idempotent change-only upserts, counts, atomic batches.

Pure tests (no HTTP, no Dagster): the store is the part a team may replace, so its contract is
pinned here on its own, including a property test against a plain dict.
"""

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from rl_sessions_dagster.api.models import TrainingSession
from rl_sessions_dagster.storage import SessionRow, SessionStore, SQLAlchemyTableStore
from rl_sessions_dagster.storage.rows import (
    CheckpointRow,
    UpsertResult,
    checkpoint_rows,
    session_row,
)
from rl_sessions_dagster.storage.urls import TableStoreError

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def make_session(sid: str = "s1", status: str = "RUNNING", **extra: Any) -> TrainingSession:
    payload: dict[str, Any] = {
        "id": sid,
        "status": f"TRAINING_SESSION_STATUS_{status}",
        "base_model": "Qwen/Qwen3-8B",
        "model_resources_id": "mr-1",
        "created_by": "user_a",
        "created_at": "2026-11-29T10:00:00Z",
        "updated_at": "2026-11-29T11:00:00Z",
        "display_name": f"gsm8k-{sid}",
        "step": "40",
        "metadata": {"wandb": {"project": "grpo", "url": f"https://wandb.ai/x/grpo/runs/{sid}"}},
        "inference_checkpoints": [
            {
                "id": f"{sid}-ck-current",
                "step": 10,
                "created_at": "2026-11-29T10:10:00Z",
                "registration": {"adapter": {"id": "ml_a", "revision_id": "rv_a"}},
            },
            {
                "id": f"{sid}-ck-objids",
                "step": 20,
                "registration": {
                    "model_name": "user_a/Qwen3-8B-rl-step-20",
                    "registered_at": "2026-11-29T10:20:00Z",
                    "model_object_id": "ml_m",
                    "model_object_revision_id": "rv_m",
                },
            },
            {
                "id": f"{sid}-ck-legacy",
                "step": 30,
                "registration": {
                    "model_name": "user_a/legacy",
                    "registered_at": "2026-01-01T00:00:00Z",
                },
            },
            {"id": f"{sid}-ck-none", "step": 40},
        ],
        "training_checkpoints": [
            {"id": f"{sid}-tr", "step": 40, "registration": {"id": "ml_t", "revision_id": "rv_t"}}
        ],
    }
    payload.update(extra)
    return TrainingSession.model_validate(payload)


def query(store: SQLAlchemyTableStore, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read through the store's own engine (what another reader would see)."""
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLAlchemyTableStore]:
    s = SQLAlchemyTableStore(tmp_path / "nested" / "sync.sqlite")
    yield s
    s.close()


def test_session_row_maps_every_column() -> None:
    row = session_row(
        make_session(status="ERROR", error={"code": "TRAINING_SESSION_ERROR_CODE_TIMED_OUT",
                                            "message": "boom"}),
        T0,
    )  # fmt: skip
    assert row.status == "ERROR" and row.raw_status == "TRAINING_SESSION_STATUS_ERROR"
    assert (row.error_code, row.error_message) == ("TIMED_OUT", "boom")
    assert row.step == 40  # int64 sent as a string is stored as an int
    assert row.wandb_project == "grpo" and row.wandb_url.endswith("/runs/s1")
    assert row.n_inference_checkpoints == 4
    assert row.created_at == "2026-11-29T10:00:00+00:00"
    assert row.synced_at == T0.isoformat()


def test_unknown_status_and_error_code_keep_the_raw_wire_value() -> None:
    """A status newer than this library must not be stored as a misleading known one."""
    session = make_session(error={"code": "TRAINING_SESSION_ERROR_CODE_NEW_THING"})
    session = session.model_copy(update={"raw_status": "TRAINING_SESSION_STATUS_PAUSED"})
    row = session_row(session, T0)
    assert (row.status, row.raw_status) == ("UNKNOWN", "TRAINING_SESSION_STATUS_PAUSED")
    assert row.error_code == "TRAINING_SESSION_ERROR_CODE_NEW_THING"


def test_checkpoint_rows_normalise_the_three_registration_shapes() -> None:
    rows = {r.id: r for r in checkpoint_rows(make_session(), T0)}

    def cols(ck_id: str, *names: str) -> tuple[Any, ...]:
        return tuple(getattr(rows[ck_id], n) for n in names)

    assert cols("s1-ck-current", "adapter_id", "adapter_revision_id", "registered") == (
        "ml_a", "rv_a", 1,
    )  # fmt: skip
    assert cols("s1-ck-objids", "model_id", "legacy_model_name", "registered") == (
        "ml_m", "user_a/Qwen3-8B-rl-step-20", 1,
    )  # fmt: skip
    assert cols("s1-ck-legacy", "model_id", "legacy_model_name", "registered") == (
        None, "user_a/legacy", 1,
    )  # fmt: skip
    assert cols("s1-ck-none", "registered", "model_id", "adapter_id") == (0, None, None)
    assert cols("s1-tr", "type", "model_id", "registered") == ("TRAINING", "ml_t", 1)
    assert all(r.session_id == "s1" and r.base_model == "Qwen/Qwen3-8B" for r in rows.values())
    without = checkpoint_rows(make_session(), T0, include_training=False)
    assert "s1-tr" not in {r.id for r in without}


def test_store_creates_schema_in_wal_mode_and_is_a_session_store(
    store: SQLAlchemyTableStore, tmp_path: Path
) -> None:
    assert isinstance(store, SessionStore)
    assert query(store, "PRAGMA journal_mode") == [("wal",)]
    cols = [r[1] for r in query(store, "PRAGMA table_info(rl_sessions)")]
    assert cols == [f.name for f in dataclasses.fields(SessionRow)]
    cols = [r[1] for r in query(store, "PRAGMA table_info(rl_checkpoints)")]
    assert cols == [f.name for f in dataclasses.fields(CheckpointRow)]
    assert (tmp_path / "nested" / "sync.sqlite").exists()


def test_upsert_reports_inserted_updated_unchanged(store: SQLAlchemyTableStore) -> None:
    rows = [session_row(make_session(f"s{i}"), T0) for i in range(3)]
    assert store.upsert_sessions(rows) == UpsertResult(inserted=3)
    # Same content a sync later: nothing is rewritten, synced_at included.
    later = T0 + timedelta(minutes=15)
    again = [session_row(make_session(f"s{i}"), later) for i in range(3)]
    assert store.upsert_sessions(again) == UpsertResult(unchanged=3)
    stopped = session_row(make_session("s1", status="STOPPED"), later)
    new = session_row(make_session("s9"), later)
    assert store.upsert_sessions([stopped, new, again[0]]) == UpsertResult(1, 1, 1)
    got = dict(query(store, "SELECT id, status FROM rl_sessions"))
    assert got == {"s0": "RUNNING", "s1": "STOPPED", "s2": "RUNNING", "s9": "RUNNING"}
    synced = dict(query(store, "SELECT id, synced_at FROM rl_sessions"))
    assert synced["s0"] == T0.isoformat() and synced["s1"] == later.isoformat()


def test_null_to_value_and_value_to_null_are_changes(store: SQLAlchemyTableStore) -> None:
    """``IS NOT`` (not ``!=``) in the change test: NULL transitions must not be missed."""
    base = session_row(make_session(), T0)
    store.upsert_sessions([base])
    cleared = dataclasses.replace(base, display_name=None)
    assert store.upsert_sessions([cleared]).updated == 1
    assert store.upsert_sessions([base]).updated == 1
    assert store.upsert_sessions([base]).unchanged == 1


def test_repeated_id_in_one_batch_counts_once_and_last_wins(store: SQLAlchemyTableStore) -> None:
    a = session_row(make_session(), T0)
    b = dataclasses.replace(a, status="STOPPED")
    assert store.upsert_sessions([a, b]) == UpsertResult(inserted=1)
    assert query(store, "SELECT status FROM rl_sessions") == [("STOPPED",)]


def test_counts_cover_the_whole_table(store: SQLAlchemyTableStore) -> None:
    sessions = [make_session("a"), make_session("b", status="ERROR"), make_session("c")]
    store.upsert_sessions([session_row(s, T0) for s in sessions])
    store.upsert_checkpoints([r for s in sessions for r in checkpoint_rows(s, T0)])
    counts = store.counts()
    assert (counts.sessions, counts.checkpoints) == (3, 15)
    assert counts.sessions_by_status == {"ERROR": 1, "RUNNING": 2}


def test_a_failing_batch_is_rolled_back_whole(store: SQLAlchemyTableStore) -> None:
    good = session_row(make_session("ok"), T0)
    bad = dataclasses.replace(session_row(make_session("bad"), T0), status=None)  # NOT NULL
    with pytest.raises(TableStoreError, match="IntegrityError") as info:
        store.upsert_sessions([good, bad])
    assert "nothing of this call was written" in str(info.value)
    assert store.counts().sessions == 0
    assert store.upsert_sessions([good]) == UpsertResult(inserted=1)  # connection still usable


def test_data_survives_reopening_and_batches_larger_than_one_lookup(tmp_path: Path) -> None:
    path = tmp_path / "sync.sqlite"
    rows = [session_row(make_session(f"s{i:04d}"), T0) for i in range(2_000)]
    with SQLAlchemyTableStore(path) as first:
        assert first.upsert_sessions(rows).inserted == 2_000
    with SQLAlchemyTableStore(path) as second:
        assert second.upsert_sessions(rows) == UpsertResult(unchanged=2_000)
        assert second.counts().sessions == 2_000


_ids = st.sampled_from([f"s{i}" for i in range(6)])
_statuses = st.sampled_from(["RUNNING", "STOPPED", "ERROR"])
_batches = st.lists(st.lists(st.tuples(_ids, _statuses), max_size=8), max_size=6)


@settings(max_examples=60, deadline=None)
@given(_batches)
def test_upserts_behave_like_a_last_write_wins_dict(batches: list[list[tuple[str, str]]]) -> None:
    """Whatever the batches, the table equals a dict updated in order, and the counts agree."""
    template = session_row(make_session(), T0)
    model: dict[str, str] = {}
    total = UpsertResult()
    with SQLAlchemyTableStore(":memory:") as store:
        for batch in batches:
            rows = [dataclasses.replace(template, id=i, status=s) for i, s in batch]
            distinct = dict(batch)
            expected_inserted = len(distinct.keys() - model.keys())
            expected_updated = sum(1 for i, s in distinct.items() if i in model and model[i] != s)
            result = store.upsert_sessions(rows)
            assert (result.inserted, result.updated) == (expected_inserted, expected_updated)
            assert result.total == len(distinct)
            model.update(distinct)
            total += result
        table = dict(query(store, "SELECT id, status FROM rl_sessions"))
        assert table == model
        assert total.inserted == len(model)
