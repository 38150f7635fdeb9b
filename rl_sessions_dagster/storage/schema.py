"""Every table, and :func:`upgrade`, run in one locked transaction by every store that opens a
database (sync and spend may open it at once): older tables upgraded, a newer release's refused."""

from datetime import UTC, datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..version import __version__
from .rows import SCHEMA_VERSION
from .urls import TableStoreError

#: Columns added after a table's first release (nullable): added to older tables on open.
_ADDED_COLUMNS = [("sessions", "missing_since")]
#: Key of the PostgreSQL advisory lock that serialises upgrades ("rl_tbls" in ASCII).
_LOCK_KEY = 0x726C5F74626C73


def _columns(*names: str, kind: Any = sa.Text) -> list[sa.Column[Any]]:
    return [sa.Column(name, kind) for name in names]


class Tables(NamedTuple):
    meta: sa.MetaData
    sessions: sa.Table
    checkpoints: sa.Table
    resource_spend: sa.Table
    session_spend: sa.Table
    version: sa.Table
    sync_state: sa.Table


def define_tables(schema: str | None = None) -> Tables:
    meta = sa.MetaData(schema=schema)
    key = sa.String(255)  # bounded: usable as a key and in an index on every dialect
    sessions = sa.Table(
        "rl_sessions",
        meta,
        sa.Column("id", key, primary_key=True, doc="Session id (primary key)."),
        sa.Column("display_name", sa.Text),
        sa.Column(
            "status", sa.String(64), nullable=False, index=True, doc="Short status, e.g. RUNNING."
        ),
        sa.Column("raw_status", sa.Text, nullable=False, doc="Status constant as sent by the API."),
        *_columns("base_model", "model_resources_id", "created_by"),
        sa.Column("created_at", sa.String(64), index=True, doc="ISO 8601 UTC."),
        sa.Column("updated_at", sa.String(64), doc="ISO 8601 UTC."),
        sa.Column("step", sa.BigInteger),
        *_columns("error_code", "error_message", "wandb_url", "wandb_project"),
        sa.Column("n_inference_checkpoints", sa.Integer, nullable=False),
        sa.Column(
            "synced_at", sa.String(64), nullable=False, doc="When a sync last wrote this row."
        ),
        sa.Column("missing_since", sa.String(64), doc="When a complete sync last missed it."),
    )
    checkpoints = sa.Table(
        "rl_checkpoints",
        meta,
        sa.Column("id", key, primary_key=True),
        sa.Column("session_id", key, nullable=False, index=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("step", sa.BigInteger),
        sa.Column("created_at", sa.String(64)),
        *_columns("base_model", "model_id", "model_revision_id", "adapter_id"),
        *_columns("adapter_revision_id", "legacy_model_name"),
        sa.Column("registered", sa.Integer, nullable=False),
        sa.Column("synced_at", sa.String(64), nullable=False),
    )
    resource_spend = sa.Table(
        "rl_resource_spend",
        meta,
        sa.Column("id", key, primary_key=True),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("base_model", sa.Text),
        *_columns("ready_from_ms", "ready_until_ms", kind=sa.BigInteger),
        sa.Column("span_source", sa.String(64), nullable=False),
        sa.Column("price_per_hour", sa.Float),
        sa.Column("currency", sa.String(16)),
        sa.Column("billed_seconds", sa.Float, nullable=False),
        *_columns("idle_seconds", "cost", "idle_cost", kind=sa.Float),
        sa.Column("computed_at_ms", sa.BigInteger, nullable=False),
    )
    session_spend = sa.Table(
        "rl_session_spend",
        meta,
        sa.Column("session_id", key, primary_key=True),
        sa.Column("model_resources_id", sa.Text, nullable=False),
        sa.Column("display_name", sa.Text),
        sa.Column("sweep", sa.Text, nullable=False),
        sa.Column("billed_seconds", sa.Float, nullable=False),
        sa.Column("cost", sa.Float),
        sa.Column("computed_at_ms", sa.BigInteger, nullable=False),
    )
    version = sa.Table(
        "rl_schema_version",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.Integer, nullable=False),
        *_columns("library_version", "upgraded_at", kind=sa.String(64)),
    )
    sync_state = sa.Table(
        "rl_sync_state",
        meta,
        sa.Column("key", key, primary_key=True, doc="The sync asset's key and filter."),
        sa.Column("state", sa.Text, nullable=False, doc="Its tracker state (a cursor)."),
        sa.Column("mode", sa.String(32), nullable=False, doc="The run that wrote it."),
        sa.Column("saved_at", sa.String(64), nullable=False, doc="ISO 8601 UTC."),
    )
    return Tables(meta, sessions, checkpoints, resource_spend, session_spend, version, sync_state)


def upgrade(conn: Connection, tables: Tables) -> int:
    """Create or upgrade every table in ``conn``'s transaction; the version found (0: none)."""
    schema = tables.meta.schema
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        if schema:
            quoted = conn.dialect.identifier_preparer.quote_schema(schema)
            conn.execute(sa.text(f"CREATE SCHEMA IF NOT EXISTS {quoted}"))
    version = tables.version
    found = None
    if sa.inspect(conn).has_table(version.name, schema=version.schema):
        found = conn.execute(sa.select(version.c.version).where(version.c.id == 1)).scalar()
    if found is not None and found > SCHEMA_VERSION:
        raise TableStoreError(
            f"the tables were upgraded to schema version {found} by a newer release of "
            f"rl-sessions-dagster; this release ({__version__}) writes version {SCHEMA_VERSION}: "
            "upgrade the package on every process that opens them"
        )
    if found == SCHEMA_VERSION:
        return found
    tables.meta.create_all(conn, checkfirst=True)
    inspector = sa.inspect(conn)
    for attr, name in _ADDED_COLUMNS:
        table = getattr(tables, attr)
        if name not in {c["name"] for c in inspector.get_columns(table.name, schema=table.schema)}:
            ddl = table.c[name].type.compile(dialect=conn.dialect)
            target = conn.dialect.identifier_preparer.format_table(table)
            conn.execute(sa.text(f"ALTER TABLE {target} ADD COLUMN {name} {ddl}"))
    at = datetime.now(UTC).isoformat()
    values = {"version": SCHEMA_VERSION, "library_version": __version__, "upgraded_at": at}
    if found is None:
        conn.execute(sa.insert(version).values(id=1, **values))
    else:
        conn.execute(sa.update(version).where(version.c.id == 1).values(**values))
    return found or 0
