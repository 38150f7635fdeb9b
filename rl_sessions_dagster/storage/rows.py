"""The rows of the library's flat tables (plain SQL for analysts), how API objects map to them,
and what a store must do: every store writes these same rows. Pure: no database, no Dagster."""

from collections.abc import Iterable, Sequence
from dataclasses import asdict, astuple, dataclass, field
from datetime import UTC, datetime
from typing import Protocol, Self, runtime_checkable

from ..api.models import InferenceCheckpoint, TrainingCheckpoint, TrainingSession
from ..core.spend import ResourceSpan

#: The tables' schema version (``schema.py``), kept in ``rl_schema_version``.
SCHEMA_VERSION = 4


def iso_utc(value: datetime | None) -> str | None:
    """ISO 8601 UTC: sortable, readable in any SQL client."""
    if value is not None and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return None if value is None else value.isoformat()


@dataclass(frozen=True)
class SessionRow:
    """``status`` is the short name (``RUNNING``); ``raw_status`` keeps a newer status as sent."""

    id: str
    display_name: str | None
    status: str
    raw_status: str
    base_model: str | None
    model_resources_id: str | None
    created_by: str | None
    created_at: str | None
    updated_at: str | None
    step: int | None
    error_code: str | None
    error_message: str | None
    wandb_url: str | None
    wandb_project: str | None
    n_inference_checkpoints: int
    synced_at: str
    #: When a complete, unfiltered sync first missed the session; cleared if it comes back.
    missing_since: str | None = None


@dataclass(frozen=True)
class CheckpointRow:
    """``INFERENCE`` rows say what to deploy; a ``TRAINING`` row's model ids are resume state."""

    id: str
    session_id: str
    type: str
    step: int | None
    created_at: str | None
    base_model: str | None
    model_id: str | None
    model_revision_id: str | None
    adapter_id: str | None
    adapter_revision_id: str | None
    legacy_model_name: str | None
    registered: int
    synced_at: str


def session_row(session: TrainingSession, synced_at: datetime) -> SessionRow:
    wandb, error = session.metadata.wandb, session.error
    code = None
    if error is not None and error.code is not None:  # short when known, else as sent
        code = error.code_raw if error.code.name == "UNKNOWN" else error.code.short
    return SessionRow(
        id=session.id,
        display_name=session.display_name,
        status=session.status.short,
        raw_status=session.raw_status,
        base_model=session.base_model,
        model_resources_id=session.model_resources_id,
        created_by=session.created_by,
        created_at=iso_utc(session.created_at),
        updated_at=iso_utc(session.updated_at),
        step=session.step,
        error_code=code,
        error_message=error.message if error is not None else None,
        wandb_url=wandb.url if wandb is not None else None,
        wandb_project=wandb.project if wandb is not None else None,
        n_inference_checkpoints=len(session.inference_checkpoints),
        synced_at=iso_utc(synced_at) or "",
    )


#: ``rl_checkpoints`` columns an inference checkpoint's registration fills (same names).
_REGISTRY = (
    "model_id",
    "model_revision_id",
    "adapter_id",
    "adapter_revision_id",
    "legacy_model_name",
)


def checkpoint_rows(
    session: TrainingSession, synced_at: datetime, *, include_training: bool = True
) -> list[CheckpointRow]:
    """The rows of the checkpoints a session embeds (no extra request)."""
    at = iso_utc(synced_at) or ""

    def row(
        ck: InferenceCheckpoint | TrainingCheckpoint, registered: bool, **registry: str | None
    ) -> CheckpointRow:
        return CheckpointRow(
            id=ck.id,
            session_id=session.id,
            type="INFERENCE" if isinstance(ck, InferenceCheckpoint) else "TRAINING",
            step=ck.step,
            created_at=iso_utc(ck.created_at),
            base_model=session.base_model,
            **{**dict.fromkeys(_REGISTRY), **registry},
            registered=int(registered),
            synced_at=at,
        )

    rows = []
    for ck in session.inference_checkpoints:
        reg = ck.registration
        rows.append(row(ck, ck.is_registered, **{c: getattr(reg, c) for c in _REGISTRY if reg}))
    for tk in session.training_checkpoints if include_training else ():
        art = tk.registration
        ids = {"model_id": art.id, "model_revision_id": art.revision_id} if art else {}
        rows.append(row(tk, bool(art and art.id), **ids))
    return rows


@dataclass(frozen=True)
class ResourceSpendRow:
    """A model resource's billed span and what it cost."""

    span: ResourceSpan
    billed_seconds: float
    idle_seconds: float | None
    cost: float | None
    idle_cost: float | None


@dataclass(frozen=True)
class SessionSpendRow:
    """A session's share of its resource's billed time."""

    session_id: str
    model_resources_id: str
    display_name: str | None
    sweep: str
    billed_seconds: float
    cost: float | None


@dataclass
class UpsertResult:
    """Rows written by upserts (``unchanged``: already identical)."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        return self.inserted + self.updated + self.unchanged

    def __add__(self, other: Self) -> Self:
        return type(self)(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class StoreCounts:
    """Row counts; rows marked missing are in the other counts too."""

    sessions: int
    checkpoints: int
    sessions_by_status: dict[str, int] = field(default_factory=dict)
    sessions_missing: int = 0


@runtime_checkable
class SessionStore(Protocol):
    """What the sync asset needs; ``upsert_*`` are idempotent by ``id``."""

    def upsert_sessions(self, rows: Sequence[SessionRow]) -> UpsertResult: ...

    def upsert_checkpoints(self, rows: Sequence[CheckpointRow]) -> UpsertResult: ...

    def counts(self) -> StoreCounts: ...

    def close(self) -> None: ...

    # Optional (see SQLAlchemyTableStore): ``mark_missing``, ``mark_sessions_missing``,
    # ``load_sync_state``, ``save_sync_state`` (without them every sync walks the whole list).


@runtime_checkable
class SpendStore(Protocol):
    """What the spend asset and GPU sensors need: spans kept across runs, spend rows."""

    def load_spans(self) -> dict[str, ResourceSpan]: ...

    def save(
        self,
        resources: Sequence[ResourceSpendRow],
        sessions: Iterable[SessionSpendRow],
        *,
        now_ms: int,
    ) -> None:
        """Replace the rows of these resources and sessions (one transaction)."""

    def save_spans(self, spans: Iterable[ResourceSpan], *, now_ms: int) -> None:
        """Upsert only the span columns (sensors, between spend runs): billed and cost stay."""
