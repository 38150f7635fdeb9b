"""Running one sync against the simulator without Dagster (fast enough for property tests), and
the tables compared row for row, ignoring only when a row was written."""

import logging
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rl_sessions_dagster.api.clock import ServerClock
from rl_sessions_dagster.assets.sync import SyncConfig, _Run
from rl_sessions_dagster.assets.sync_reading import SyncStats
from rl_sessions_dagster.storage import SQLAlchemyTableStore
from rl_sessions_dagster.testing import RLSimulator
from tests.support import sim_resource

KEY = "together/rl_sessions_table"
LOG = logging.getLogger("tests.sync")


def run_once(
    sim: RLSimulator,
    store: SQLAlchemyTableStore,
    *,
    now: datetime | None = None,
    attempts: int = 1,
    **config: Any,
) -> SyncStats:
    """One sync run as the asset does it (``now``: the world's clock unless given)."""
    clock = ServerClock()
    with sim_resource(sim, max_attempts=attempts).get_client(server_clock=clock) as client:
        run = _Run(
            LOG,
            client,
            clock,
            store,
            SyncConfig(**config),
            None,
            [],
            lambda _: None,
            now=now or sim.world.now(),
        )
        stats = run.sync(KEY)
        stats.api_requests = client.stats.requests
        return stats


def live_rows(store: SQLAlchemyTableStore) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sessions still listed (not marked missing) and every checkpoint, without ``synced_at``."""
    sessions, checkpoints = store.table("rl_sessions"), store.table("rl_checkpoints")
    with store.engine.connect() as conn:
        s_rows = conn.execute(sa.select(sessions).where(sessions.c.missing_since.is_(None)))
        c_rows = conn.execute(sa.select(checkpoints))
        drop = ("synced_at", "missing_since")
        return (
            {r.id: {k: v for k, v in r._mapping.items() if k not in drop} for r in s_rows},
            {r.id: {k: v for k, v in r._mapping.items() if k not in drop} for r in c_rows},
        )


def fresh_walk(sim: RLSimulator) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a full walk into an empty database writes now."""
    with SQLAlchemyTableStore(":memory:") as store:
        stats = run_once(sim, store)
        assert stats.mode == "full"
        return live_rows(store)
