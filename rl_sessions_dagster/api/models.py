"""Typed, drift-tolerant views of the API's objects: unknown fields kept, every block but ``id``
optional (required fields were added several times), raw status strings beside lenient enums."""

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
    """Keeps unknown fields; schemas are built on first use, not at import (most of its time)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=False, defer_build=True)


class TopLevelModel(APIModel):
    """An object the API returns on its own or as a list item."""

    #: Raw values of optional fields that did not parse and read as None, by dotted path.
    invalid_fields: dict[str, Any] | None = None


class RegistryArtifact(APIModel):
    """A model registry revision; ``id`` is optional, so a half-filled one cannot fail a page."""

    id: str | None = None
    revision_id: str | None = None


RegistrationShape = Literal["current", "object_ids", "legacy", "unknown"]


class Registration(APIModel):
    """A registry registration in any shape (``{model_name, registered_at}``, ``*_object_id``
    fields, ``{model: {id, revision_id}, adapter: {...}}``); read it through the properties."""

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
        return self.adapter.revision_id if self.adapter else self.adapter_object_revision_id

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
    """Deployable weights, as embedded in a session."""

    id: str
    created_at: Timestamp = None
    step: int | None = None
    registration: Registration | None = None

    @property
    def is_registered(self) -> bool:
        return self.registration is not None and self.registration.is_registered


class TrainingCheckpoint(APIModel):
    """Full training state, for resuming; not deployable."""

    id: str
    created_at: Timestamp = None
    step: int | None = None
    #: As sent, ``{}`` (an unset message) included; read :attr:`registration`.
    registration_artifact: RegistryArtifact | None = Field(default=None, alias="registration")

    @property
    def registration(self) -> RegistryArtifact | None:
        """The registry artifact holding this training state; None when not registered."""
        reg = self.registration_artifact
        return None if reg is None or (not reg.model_fields_set and not reg.model_extra) else reg


class WandbMetadata(APIModel):
    entity: str | None = None
    project: str | None = None
    group: str | None = None
    run_name: str | None = None
    run_id: str | None = None
    url: str | None = None


class SessionMetadata(APIModel):
    """Frozen, so every session without ``metadata`` shares :data:`NO_METADATA`."""

    model_config = ConfigDict(frozen=True)

    wandb: WandbMetadata | None = None


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


if TYPE_CHECKING:
    MetadataOrNull = SessionMetadata
else:
    MetadataOrNull = Annotated[
        SessionMetadata | None, AfterValidator(lambda v: NO_METADATA if v is None else v)
    ]


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
    """Presigned URLs for a checkpoint's files (they carry their own auth)."""

    data: ListOrNull[CheckpointFile] = Field(default_factory=list)


class ComputeConfig(APIModel):
    num_generator_replicas: int | None = None
    gpu_type: str | None = None


class StatusDetails(APIModel):
    queue_position: int | None = None


class ModelResourceError(APIModel):
    """Why a model resource is in ERROR."""

    code_raw: str | None = Field(default=None, alias="code")
    message: str | None = None
    occurred_at: Timestamp = None

    @property
    def code(self) -> ModelResourceErrorCode | None:
        return ModelResourceErrorCode.parse(self.code_raw) if self.code_raw else None


class AdamConfig(APIModel):
    """Adam (the SDK declares no settings)."""


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


class CostEstimate(APIModel):
    currency: str | None = None
    price_per_hour: float | None = None


class SamplingDefaults(APIModel):
    logprobs: int | None = None
    max_tokens: int | None = None
    n: int | None = None
    temperature: float | None = None


class GeneratorConfig(APIModel):
    """Inference limits of a GPU type."""

    context_length: int | None = None
    sampling_defaults: SamplingDefaults | None = None


class FullTrainerConfig(APIModel):
    max_batch_size: int | None = None
    max_seq_length: int | None = None


class LoraTrainerConfig(APIModel):
    max_batch_size: int | None = None
    max_rank: int | None = None
    max_seq_length: int | None = None


class TrainerConfig(APIModel):
    """Training limits of a GPU type per mode (absent when unsupported)."""

    full: FullTrainerConfig | None = None
    lora: LoraTrainerConfig | None = None


class SupportedComputeConfig(APIModel):
    """A validated hardware configuration for a supported base model."""

    gpu_type: str | None = None
    generator_config: GeneratorConfig | None = None
    trainer_config: TrainerConfig | None = None


class SupportedModel(APIModel):
    base_model: str
    default_gpu_type: str | None = None
    compute_configs: list[SupportedComputeConfig] | None = None
