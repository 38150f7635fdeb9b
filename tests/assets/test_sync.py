"""The session sync asset, run by ``dg.materialize`` on a real instance against the simulator.

What matters to a user: the table matches the account after every run, re-running is
idempotent (nothing rewritten), status changes land, the API cost is one list walk (pages of
100, never a request per session), and the asset page shows useful, typed metadata.
"""

import sqlite3
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.assets import build_session_sync_asset
from rl_sessions_dagster.assets.schedules import table_job_and_schedule
from rl_sessions_dagster.assets.sync import SESSION_SYNC_ASSET_KEY
from rl_sessions_dagster.core.events import SessionFilter
from rl_sessions_dagster.storage import SessionRow
from rl_sessions_dagster.storage.rows import CheckpointRow, StoreCounts, UpsertResult
from rl_sessions_dagster.testing import RLSimulator

LIST = "/v1/rl/training-sessions"


def sync(
    asset: dg.AssetsDefinition,
    instance: dg.DagsterInstance,
    resource: TogetherRLResource,
    *,
    raise_on_error: bool = True,
    **config: Any,
) -> dict[str, dg.MetadataValue]:
    """Materialize ``asset`` once and return its materialization metadata."""
    result = dg.materialize(
        [asset],
        instance=instance,
        resources={"together": resource},
        run_config={"ops": {asset.op.name: {"config": config}}} if config else None,
        raise_on_error=raise_on_error,
    )
    if not result.success:
        return {}
    (mat,) = result.asset_materializations_for_node(asset.op.name)
    return dict(mat.metadata)


def values(meta: dict[str, dg.MetadataValue]) -> dict[str, Any]:
    return {k: v.value for k, v in meta.items()}


def table(path: str, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "sync.sqlite")


def test_sync_mirrors_the_account_and_rerun_is_idempotent(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    sim.world.populate(150, 3, active=10)
    asset = build_session_sync_asset()
    first = values(sync(asset, instance, resource, db_path=db, batch_size=64))
    n_sessions = len(sim.world.session_ids())
    n_checkpoints = len(table(db, "SELECT id FROM rl_checkpoints"))
    assert first["dagster/row_count"] == n_sessions == 150
    assert first["rows_inserted"] == n_sessions + n_checkpoints
    assert first["checkpoint_row_count"] == n_checkpoints == len(sim.world.checkpoints())

    quiet = values(sync(asset, instance, resource, db_path=db, batch_size=64))
    assert quiet["sync_mode"] == "incremental" and quiet["api_requests"] <= 3
    assert (quiet["rows_inserted"], quiet["rows_updated"]) == (0, 0)

    second = values(sync(asset, instance, resource, db_path=db, batch_size=64, full=True))
    assert second["sync_mode"] == "full"
    assert (second["rows_inserted"], second["rows_updated"]) == (0, 0)
    assert second["rows_unchanged"] == n_sessions + n_checkpoints
    assert second["dagster/row_count"] == first["dagster/row_count"]
    assert second["checkpoint_row_count"] == first["checkpoint_row_count"]
    expected = {}
    for s in sim.world.sessions():
        short = s["status"].removeprefix("TRAINING_SESSION_STATUS_")
        expected[short] = expected.get(short, 0) + 1
    assert second["sessions_by_status"] == expected


def test_status_changes_and_new_checkpoints_are_updated(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    world = sim.world
    a = world.create_session(display_name="a", wandb={"project": "p", "url": "https://w/a"})
    b = world.create_session(display_name="b")
    c = world.create_session(display_name="c")
    world.add_inference_checkpoint(a, step=5)
    asset = build_session_sync_asset()
    sync(asset, instance, resource, db_path=db)

    world.stop_session(a, immediate=True)
    world.fail_session(b, code="TRAINING_SESSION_ERROR_CODE_TIMED_OUT")
    new_ck = world.add_inference_checkpoint(c, step=7)
    meta = values(sync(asset, instance, resource, db_path=db))

    assert meta["rows_written"]["rl_sessions"] == {"inserted": 0, "updated": 3, "unchanged": 0}
    assert meta["rows_written"]["rl_checkpoints"]["inserted"] == 1
    rows = {r[0]: r[1:] for r in table(
        db, "SELECT id, status, error_code, n_inference_checkpoints FROM rl_sessions"
    )}  # fmt: skip
    assert rows[a][0] == "STOPPED"
    assert rows[b][:2] == ("ERROR", "TIMED_OUT")
    assert rows[c] == ("RUNNING", None, 1)
    assert table(db, f"SELECT session_id, step FROM rl_checkpoints WHERE id = '{new_ck}'") == [
        (c, 7)
    ]
    assert meta["sessions_by_status"] == {"ERROR": 1, "RUNNING": 1, "STOPPED": 1}


def test_2000_sessions_take_one_list_walk_of_20_pages(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    """Checkpoints come embedded in the sessions: no per-session or checkpoint requests."""
    sim.world.populate(2_000, 2, active=20)
    sim.requests.reset()
    meta = values(sync(build_session_sync_asset(), instance, resource, db_path=db))
    assert meta["dagster/row_count"] == 2_000
    counts = sim.requests.counts()
    assert set(counts) == {f"GET {LIST}"}
    assert counts[f"GET {LIST}"] == 20  # ceil(2000 / 100); the last page says has_more=false
    assert {r.param("limit") for r in sim.requests.records("GET", LIST)} == {"100"}
    assert meta["api_requests"] == 20


def test_metadata_is_present_and_typed(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    world = sim.world
    world.populate(30, 1, active=3)
    newest = world.create_session(
        display_name="newest|run", wandb={"project": "grpo", "url": "https://wandb.ai/o/p/runs/z"}
    )
    meta = sync(build_session_sync_asset(), instance, resource, db_path=db)
    expected_types = {
        "dagster/row_count": dg.IntMetadataValue,
        "checkpoint_row_count": dg.IntMetadataValue,
        "sessions_by_status": dg.JsonMetadataValue,
        "newest_sessions": dg.MarkdownMetadataValue,
        "rows_inserted": dg.IntMetadataValue,
        "rows_updated": dg.IntMetadataValue,
        "rows_unchanged": dg.IntMetadataValue,
        "rows_written": dg.JsonMetadataValue,
        "api_requests": dg.IntMetadataValue,
        "db_path": dg.PathMetadataValue,
        "sessions_running": dg.IntMetadataValue,
    }
    for key, kind in expected_types.items():
        assert isinstance(meta[key], kind), key
    assert meta["db_path"].value == db
    md = meta["newest_sessions"].value
    first_row = md.splitlines()[2]
    assert newest in first_row and "newest\\|run" in first_row  # newest first, pipe escaped
    assert "[grpo](https://wandb.ai/o/p/runs/z)" in first_row
    assert len(md.splitlines()) == 2 + 10


def test_unreadable_sessions_are_skipped_counted_and_named_and_the_rest_synced(
    sim: RLSimulator,
    instance: dg.DagsterInstance,
    resource: TogetherRLResource,
    db: str,
) -> None:
    world = sim.world
    world.populate(250, 1, active=5)  # three pages of 100
    ids = world.session_ids()
    no_id, int_id, bad_date = ids[20], ids[140], ids[230]
    world.mutate_session_json(no_id, drop=("id",))  # no id: unreadable
    world.mutate_session_json(int_id, extra={"id": 987654})  # id of the wrong type
    world.mutate_session_json(bad_date, extra={"updated_at": "not-a-date"})  # readable
    meta = values(sync(build_session_sync_asset(), instance, resource, db_path=db))
    assert meta["skipped_items"] == 2
    assert meta["sessions_seen"] == meta["dagster/row_count"] == 248
    stored = {row[0] for row in table(db, "SELECT id FROM rl_sessions")}
    assert stored == set(ids) - {no_id, int_id}  # every page was read past the bad items
    assert table(db, f"SELECT updated_at FROM rl_sessions WHERE id = '{bad_date}'") == [(None,)]
    md = meta["skipped_sessions"]
    assert "`987654`" in md and "(no id)" in md and "| id |" in md
    assert "Input should be a valid string" in md and "Field required" in md
    (run,) = instance.get_runs(limit=1)
    logged = [e.user_message for e in instance.all_logs(run.run_id)]
    assert len([m for m in logged if "skipped a session" in m]) == 2


def test_no_skipped_table_when_every_session_reads(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    sim.world.populate(5, 1, active=1)
    meta = values(sync(build_session_sync_asset(), instance, resource, db_path=db))
    assert meta["skipped_items"] == 0 and "skipped_sessions" not in meta


def test_asset_definition_follows_conventions() -> None:
    asset = build_session_sync_asset()
    assert asset.key == SESSION_SYNC_ASSET_KEY
    spec = next(iter(asset.specs))
    assert spec.kinds == {"together", "sql"}  # the database is chosen at run time
    assert spec.group_name == "together_rl"
    assert spec.description and "rl_sessions" in spec.description
    assert isinstance(spec.metadata["dagster/column_schema"], dg.TableSchemaMetadataValue)
    assert "together" in asset.required_resource_keys


def test_default_db_path_is_under_the_instance_root(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource
) -> None:
    sim.world.create_session()
    meta = sync(build_session_sync_asset(), instance, resource)
    path = Path(meta["db_path"].value)
    assert path == Path(instance.root_directory) / "together_rl_sync.sqlite"
    assert path.exists()


def test_factory_path_env_vars_and_custom_resource_key(
    sim: RLSimulator,
    instance: dg.DagsterInstance,
    resource: TogetherRLResource,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYNC_DIR", str(tmp_path))
    sim.world.create_session()
    asset = build_session_sync_asset(key="rl_table", resource_key="rl", db_path="$SYNC_DIR/x.db")
    result = dg.materialize([asset], instance=instance, resources={"rl": resource})
    assert result.success
    assert table(str(tmp_path / "x.db"), "SELECT count(*) FROM rl_sessions") == [(1,)]


def test_filters_go_to_the_api_and_to_each_session(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    world = sim.world
    mine = world.create_session(display_name="gsm8k-1")
    world.create_session(display_name="math-1")
    world.create_session(display_name="gsm8k-2", created_by="user_teammate")
    asset = build_session_sync_asset(
        created_by="me", session_filter=SessionFilter(display_name="gsm8k-*")
    )
    assert "created_by=me" in (next(iter(asset.specs)).description or "")
    sim.requests.reset()
    meta = values(sync(asset, instance, resource, db_path=db))
    assert {r.param("created_by") for r in sim.requests.records("GET", LIST)} == {"me"}
    assert table(db, "SELECT id FROM rl_sessions") == [(mine,)]
    assert meta["sessions_seen"] == 1
    with pytest.raises(ValueError, match="contradicts"):
        build_session_sync_asset(created_by="me", session_filter=SessionFilter(created_by="bob"))


def test_a_failed_run_keeps_its_batches_and_the_next_run_completes(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource, db: str
) -> None:
    sim.world.populate(500, 0, active=5)  # no checkpoints: batches are exactly 100 sessions
    asset = build_session_sync_asset()
    rule = sim.faults.add(f"GET {LIST}", status=500, nth=[3])
    assert sync(asset, instance, resource, raise_on_error=False, db_path=db, batch_size=100) == {}
    assert table(db, "SELECT count(*) FROM rl_sessions") == [(200,)]  # two pages, two batches
    sim.faults.remove(rule)
    meta = values(sync(asset, instance, resource, db_path=db, batch_size=100))
    assert meta["dagster/row_count"] == 500
    assert meta["rows_written"]["rl_sessions"] == {"inserted": 300, "updated": 0, "unchanged": 200}


class DictStore:
    """A user's own store: the protocol is all the asset needs."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionRow] = {}
        self.checkpoints: dict[str, CheckpointRow] = {}
        self.closed = False

    def _put(self, target: dict[str, Any], rows: Any) -> UpsertResult:
        result = UpsertResult()
        for row in rows:
            result += UpsertResult(inserted=1) if row.id not in target else UpsertResult(updated=1)
            target[row.id] = row
        return result

    def upsert_sessions(self, rows: Any) -> UpsertResult:
        return self._put(self.sessions, rows)

    def upsert_checkpoints(self, rows: Any) -> UpsertResult:
        return self._put(self.checkpoints, rows)

    def counts(self) -> StoreCounts:
        return StoreCounts(len(self.sessions), len(self.checkpoints), {})

    def close(self) -> None:
        self.closed = True


def test_a_custom_store_replaces_sqlite(
    sim: RLSimulator, instance: dg.DagsterInstance, resource: TogetherRLResource
) -> None:
    sim.world.populate(12, 2, active=2)
    stores: list[tuple[str, DictStore]] = []

    def factory(path: str) -> DictStore:
        stores.append((path, DictStore()))
        return stores[-1][1]

    asset = build_session_sync_asset(store_factory=factory, kinds={"together", "python"})
    meta = values(sync(asset, instance, resource, db_path="postgres-ish://x"))
    ((path, store),) = stores
    assert path == "postgres-ish://x" and store.closed
    assert len(store.sessions) == 12 == meta["dagster/row_count"]
    assert next(iter(asset.specs)).kinds == {"together", "python"}


def test_sync_definitions_load_and_resolve(sim: RLSimulator, resource: TogetherRLResource) -> None:
    asset = build_session_sync_asset()
    job, schedule = table_job_and_schedule(asset)
    defs = dg.Definitions(
        assets=[asset], jobs=[job], schedules=[schedule], resources={"together": resource}
    )
    job = defs.resolve_job_def("together__rl_sessions_table_sync_job")
    assert [n.name for n in job.nodes] == ["together__rl_sessions_table"]
    schedule = defs.resolve_schedule_def("together__rl_sessions_table_sync_job_schedule")
    assert schedule.job_name == job.name
