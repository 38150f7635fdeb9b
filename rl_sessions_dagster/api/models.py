"""Typed, drift-tolerant views of the RL API's objects.

Every model keeps unknown fields (``extra="allow"``), accepts int64 fields sent as strings, and
treats every block but ``id`` as optional: the API has added required fields several times
(its changelog), and a monitoring library must not crash on the next one.
Statuses are kept as the raw wire string; the typed enum is derived and maps new values to
``UNKNOWN``.

Objects the API returns at top level (sessions, checkpoints, model resources, operations) have
``invalid_fields``: when a value of an optional field does not parse (``"updated_at":
"not-a-date"``), the client reads the object anyway with that field ``None`` and keeps the raw
value there, keyed by its dotted path (``{"updated_at": "not-a-date"}``). This happens only on
the slow path (see ``pages.py``): a well-formed response is parsed natively in one pass.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .enums import (
    CheckpointType,
    ModelResourceErrorCode,
    ModelResourceStatus,
    MuonScalingStrategy,
    SessionErrorCode,
    SessionStatus,
)
from .pages import EmptyIsNone, LazyList, ListOrNull, RawEnum, Timestamp


class APIModel(BaseModel):
    """Base: keep unknown fields, allow field names and aliases, coerce numeric strings.

    Schemas are built on first use (``defer_build``), not at import: a definitions file that
    imports this package reads few of these models, and building all of them was most of the
    package's import time.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=False, defer_build=True)


class TopLevelModel(APIModel):
    """An object the API returns on its own or as a list item."""

    #: Raw values of optional fields that did not parse (now None), by dotted path; None if
    #: every field parsed. See the module docstring.
    invalid_fields: dict[str, Any] | None = None


class RegistryArtifact(APIModel):
    """A revision of a model in the Together model registry.

    ``id`` is optional: a half-filled registration must not make the enclosing checkpoint (and
    the page it is on) unparseable.
    """

    id: str | None = None
    revision_id: str | None = None


RegistrationShape = Literal["current", "object_ids", "legacy", "unknown"]


class Registration(APIModel):
    """One view of a checkpoint's model-registry registration, whatever shape the API sent.

    Three shapes have existed: ``{model_name, registered_at}`` (≤ May 2026), the same plus
    ``model_object_id``/``adapter_object_id`` revisions (Aug 2026), and the current
    ``{model: {id, revision_id}, adapter: {id, revision_id}}``. The wire fields are parsed
    natively (no Python per checkpoint: pages hold a thousand of them); the properties give
    the normalised view.
    """

    model: RegistryArtifact | None = None
    adapter: RegistryArtifact | None = None
    model_name: str | None = None
    registered_at: Timestamp = None
    model_object_id: str | None = None
    model_object_revision_id: str | None = None
    adapter_object_id: str | None = None
    adapter_object_revision_id: str | None = None

    @property
    def shape(self) -> RegistrationShape:
        if self.model is not None or self.adapter is not None:
            return "current"
        if self.model_object_id or self.adapter_object_id:
            return "object_ids"
        if self.model_name:
            return "legacy"
        return "unknown"

    @property
    def model_id(self) -> str | None:
        return self.model.id if self.model is not None else self.model_object_id

    @property
    def model_revision_id(self) -> str | None:
        return self.model.revision_id if self.model is not None else self.model_object_revision_id

    @property
    def adapter_id(self) -> str | None:
        return self.adapter.id if self.adapter is not None else self.adapter_object_id

    @property
    def adapter_revision_id(self) -> str | None:
        if self.adapter is not None:
            return self.adapter.revision_id
        return self.adapter_object_revision_id

    @property
    def legacy_model_name(self) -> str | None:
        return self.model_name

    @property
    def is_registered(self) -> bool:
        """True when the registration names something a deployment can use."""
        return bool(self.model_id or self.adapter_id or self.legacy_model_name)

    @property
    def deployable_model(self) -> str | None:
        """The name to send as ``model`` to an inference endpoint: adapter, model, or legacy."""
        return self.adapter_id or self.model_id or self.legacy_model_name


class InferenceCheckpoint(APIModel):
    """An inference checkpoint as embedded in a session (deployable weights)."""

    id: str
    created_at: Timestamp = None
    step: int | None = None
    registration: Registration | None = None

    @property
    def is_registered(self) -> bool:
        return self.registration is not None and self.registration.is_registered


class TrainingCheckpoint(APIModel):
    """A training checkpoint (full training state, for resuming; not deployable)."""

    id: str
    created_at: Timestamp = None
    step: int | None = None
    #: As sent: ``{}`` (proto-JSON of an unset message) is kept here; read :attr:`registration`.
    registration_artifact: RegistryArtifact | None = Field(default=None, alias="registration")

    @property
    def registration(self) -> RegistryArtifact | None:
        """The registry artifact holding this training state; None when not registered.

        A property rather than a validator: sessions embed many training checkpoints, and a
        Python validator per checkpoint was a measurable share of reading a page.
        """
        reg = self.registration_artifact
        if reg is None or (not reg.model_fields_set and not reg.model_extra):
            return None
        return reg


class WandbMetadata(APIModel):
    entity: str | None = None
    project: str | None = None
    group: str | None = None
    run_name: str | None = None
    run_id: str | None = None
    url: str | None = None


class SessionMetadata(APIModel):
    """A session's ``metadata``. Frozen, so that every session without one shares
    :data:`NO_METADATA` (about half the sessions of a page: a model built for each was a
    tenth of reading the page)."""

    model_config = ConfigDict(frozen=True)

    wandb: WandbMetadata | None = None


#: The metadata of a session that has none (``null`` or missing).
NO_METADATA = SessionMetadata()


class SessionError(APIModel):
    """Why a session is in ERROR. ``code`` is missing in older payloads."""

    code_raw: str | None = Field(default=None, alias="code")
    message: str | None = None
    occurred_at: Timestamp = None

    @property
    def code(self) -> SessionErrorCode | None:
        return SessionErrorCode.parse(self.code_raw) if self.code_raw else None


class LoraConfig(APIModel):
    rank: int | None = None
    alpha: int | None = None
    dropout: float | None = None
    seed: int | None = None
    train_unembed: bool | None = None


class PolicyState(APIModel):
    applied_weights_version: int | None = None
    pending_publish: bool | None = None
    target_weights_version: int | None = None
    trainer_step: int | None = None


def _metadata_or_empty(value: SessionMetadata | None) -> SessionMetadata:
    return NO_METADATA if value is None else value


if TYPE_CHECKING:
    MetadataOrNull = SessionMetadata
else:
    MetadataOrNull = Annotated[SessionMetadata | None, AfterValidator(_metadata_or_empty)]


class TrainingSession(TopLevelModel):
    """A training session: status, step, and the checkpoints it has saved."""

    id: str
    raw_status: RawEnum = Field(default="", alias="status")
    base_model: str | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    created_by: str | None = None
    model_resources_id: str | None = None
    display_name: str | None = None
    metadata: MetadataOrNull = NO_METADATA  # hashable, so pydantic shares it instead of copying
    error: SessionError | None = None
    #: Read-only lists; from JSON the models are built on first use (see ``lazy.py``).
    inference_checkpoints: LazyList[InferenceCheckpoint] = Field(
        default_factory=lambda: LazyList.empty(InferenceCheckpoint)
    )
    training_checkpoints: LazyList[TrainingCheckpoint] = Field(
        default_factory=lambda: LazyList.empty(TrainingCheckpoint)
    )
    step: int | None = None
    policy_state: PolicyState | None = None
    lora_config: LoraConfig | None = None
    resume_from_checkpoint_id: str | None = None

    @property
    def status(self) -> SessionStatus:
        """The typed status; ``UNKNOWN`` for a value this library does not know."""
        return SessionStatus.parse(self.raw_status)

    @property
    def is_terminal(self) -> bool:
        """STOPPED, ERROR or EXPIRED: the session will not change again."""
        return self.status.is_terminal

    @property
    def wandb_url(self) -> str | None:
        return self.metadata.wandb.url if self.metadata.wandb else None


class Checkpoint(TopLevelModel):
    """A checkpoint as returned by ``/v1/rl/checkpoints`` (either type)."""

    id: str
    base_model: str | None = None
    created_at: Timestamp = None
    session_id: str | None = None
    step: int | None = None
    raw_type: RawEnum = Field(default="", alias="type")
    inference_registration: EmptyIsNone[Registration] = None
    training_registration: EmptyIsNone[RegistryArtifact] = None
    lora_rank: int | None = None

    @property
    def type(self) -> CheckpointType:
        return CheckpointType.parse(self.raw_type)

    @property
    def is_registered(self) -> bool:
        reg = self.inference_registration
        return reg is not None and reg.is_registered


class CheckpointFile(APIModel):
    filename: str
    url: str
    size: int | None = None


class CheckpointDownload(APIModel):
    """Presigned URLs for a checkpoint's files. The URLs carry their own auth."""

    data: ListOrNull[CheckpointFile] = Field(default_factory=list)


class ComputeConfig(APIModel):
    num_generator_replicas: int | None = None
    gpu_type: str | None = None


class StatusDetails(APIModel):
    queue_position: int | None = None


class ModelResourceError(APIModel):
    """Why a model resource is in ERROR; the raw code is kept beside the typed one."""

    code_raw: str | None = Field(default=None, alias="code")
    message: str | None = None
    occurred_at: Timestamp = None

    @property
    def code(self) -> ModelResourceErrorCode | None:
        return ModelResourceErrorCode.parse(self.code_raw) if self.code_raw else None


class AdamConfig(APIModel):
    """Adam optimizer (the SDK declares no settings)."""


class MuonConfig(APIModel):
    raw_scaling_strategy: str | None = Field(default=None, alias="scaling_strategy")

    @property
    def scaling_strategy(self) -> MuonScalingStrategy | None:
        raw = self.raw_scaling_strategy
        return MuonScalingStrategy.parse(raw) if raw else None


class OptimizerConfig(APIModel):
    """The resource's optimizer: ``adam`` or ``muon`` is set."""

    adam: AdamConfig | None = None
    muon: MuonConfig | None = None


class ModelResource(TopLevelModel):
    """Provisioned GPUs that sessions attach to. Billed only while READY."""

    id: str
    raw_status: RawEnum = Field(default="", alias="status")
    base_model: str | None = None
    compute_config: ComputeConfig | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    created_by: str | None = None
    inactive_timeout: int | None = None
    lora_enabled: bool | None = None
    optimizer_config: OptimizerConfig | None = None
    status_details: StatusDetails | None = None
    base_weights_ref: str | None = None
    error: ModelResourceError | None = None
    expires_at: Timestamp = None

    @property
    def status(self) -> ModelResourceStatus:
        return ModelResourceStatus.parse(self.raw_status)
