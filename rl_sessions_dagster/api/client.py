"""``RLSessionsClient``: typed methods for Together's RL API. ``deadline=`` is an absolute
``RetryPolicy.clock`` time by which the call (retries, sleeps included) or each page must end."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._http import compact, segment
from .enums import (
    CheckpointType,
    CheckpointVariant,
    LenientEnum,
    ModelResourceStatus,
    SessionStatus,
    wire_prefix,
)
from .inference import InferenceAPI
from .models import (
    Checkpoint,
    CheckpointDownload,
    CostEstimate,
    LoraConfig,
    ModelResource,
    SessionMetadata,
    SupportedModel,
    TrainingSession,
)
from .operations import _SESSIONS, JSON, OPERATION_KINDS, OperationKind, OperationsAPI
from .pages import Page, SkippedItem

StatusFilter = Iterable[SessionStatus | str] | SessionStatus | str | None
ResourceStatusFilter = Iterable[ModelResourceStatus | str] | ModelResourceStatus | str | None
__all__ = ["OPERATION_KINDS", "OperationKind", "RLSessionsClient"]

_CHECKPOINTS = "/v1/rl/checkpoints"
_RESOURCES = "/v1/rl/model-resources"
#: ``(path, page model)`` of each list endpoint: the first arguments of ``_list_page``/``_iterate``.
_SESSION_LIST = (_SESSIONS, Page[TrainingSession])
_CKPT_LIST = (_CHECKPOINTS, Page[Checkpoint])
_RES_LIST = (_RESOURCES, Page[ModelResource])


def _constant(value: LenientEnum | str, enum: type[LenientEnum], name: str) -> str:
    """A short or full enum name as the wire constant; an unknown one is refused (a typo would
    match nothing) unless spelled in full with the enum's prefix (a newer value)."""
    member = enum.parse(value)
    if member.name not in ("UNKNOWN", "UNSPECIFIED"):
        return member.value
    text = str(value).strip().upper()
    if member.name == "UNKNOWN" and text.startswith(wire_prefix(enum)) and wire_prefix(enum):
        return text
    raise ValueError(f"{name}: {value!r} is not a valid {enum.__name__} filter")


def _status_query(values: Any, enum: type[LenientEnum]) -> str | None:
    """The SDK's wire form for array filters: one comma-joined value, deduplicated in order."""
    if values is None:
        return None
    if isinstance(values, str):  # also enum members: a lone value, not characters
        values = [values]
    joined = list(dict.fromkeys(_constant(v, enum, "status") for v in values))
    if not joined:
        raise ValueError("status filter is empty; pass None to list every status")
    return ",".join(joined)


def _session_filters(
    status: StatusFilter, model_resources_id: str | None, created_by: str | None
) -> JSON:
    return compact(
        status=_status_query(status, SessionStatus),
        model_resources_id=model_resources_id,
        created_by=created_by,
    )


def _checkpoint_filters(
    session_id: str | None, type: CheckpointType | str | None, base_model: str | None
) -> JSON:
    return compact(
        session_id=session_id,
        type=None if type is None else _constant(type, CheckpointType, "type"),
        base_model=base_model,
    )


class RLSessionsClient(OperationsAPI, InferenceAPI):
    """Synchronous client for ``/v1/rl/*``; a context manager. The key falls back to
    ``TOGETHER_API_KEY``, the base URL to ``TOGETHER_BASE_URL`` then ``https://api.together.ai``."""

    def create_session(
        self,
        model_resources_id: str,
        *,
        display_name: str | None = None,
        metadata: SessionMetadata | JSON | None = None,
        lora_config: LoraConfig | JSON | None = None,
        resume_from_checkpoint_id: str | None = None,
        load_optimizer: bool | None = None,
        deadline: float | None = None,
    ) -> TrainingSession:
        """Start a session on a READY model resource. Not retried once it may have been sent."""
        body = compact(
            model_resources_id=model_resources_id,
            display_name=display_name,
            metadata=metadata,
            lora_config=lora_config,
            resume_from_checkpoint_id=resume_from_checkpoint_id,
            load_optimizer=load_optimizer,
        )
        return self._request(
            "POST", _SESSIONS, TrainingSession, json=body, idempotent=False, deadline=deadline
        )

    def get_session(self, session_id: str, *, deadline: float | None = None) -> TrainingSession:
        path = f"{_SESSIONS}/{segment(session_id, 'session_id')}"
        return self._request("GET", path, TrainingSession, deadline=deadline)

    def update_session(
        self,
        session_id: str,
        *,
        display_name: str | None = None,
        metadata: SessionMetadata | JSON | None = None,
        deadline: float | None = None,
    ) -> TrainingSession:
        """PATCH display name / metadata: None leaves a field unchanged, ``""`` clears it."""
        path = f"{_SESSIONS}/{segment(session_id, 'session_id')}"
        body = compact(display_name=display_name, metadata=metadata)
        return self._request(
            "PATCH", path, TrainingSession, json=body, idempotent=False, deadline=deadline
        )

    def stop_session(self, session_id: str, *, deadline: float | None = None) -> TrainingSession:
        """Stop (detach) a session; its model resource keeps running and billing."""
        path = f"{_SESSIONS}/{segment(session_id, 'session_id')}/stop"
        return self._request("POST", path, TrainingSession, idempotent=False, deadline=deadline)

    def list_sessions_page(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        status: StatusFilter = None,
        model_resources_id: str | None = None,
        created_by: str | None = None,
        deadline: float | None = None,
    ) -> Page[TrainingSession]:
        """One page of sessions (``page.next_cursor`` is the next ``after``); ``status`` takes
        members or short/full names, ``created_by`` a user id or ``"me"``."""
        filters = _session_filters(status, model_resources_id, created_by)
        return self._list_page(*_SESSION_LIST, filters, after=after, limit=limit, deadline=deadline)

    def list_sessions(
        self,
        *,
        status: StatusFilter = None,
        model_resources_id: str | None = None,
        created_by: str | None = None,
        page_size: int = 100,
        deadline: float | None = None,
        on_skipped: Callable[[SkippedItem], None] | None = None,
    ) -> Iterator[TrainingSession]:
        """Every matching session (order undocumented), pages fetched as it is consumed."""
        filters = _session_filters(status, model_resources_id, created_by)
        return self._iterate(*_SESSION_LIST, filters, page_size, deadline, on_skipped)

    def list_checkpoints_page(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        session_id: str | None = None,
        type: CheckpointType | str | None = None,
        base_model: str | None = None,
        deadline: float | None = None,
    ) -> Page[Checkpoint]:
        """One page of the caller's checkpoints, newest first (documented order)."""
        filters = _checkpoint_filters(session_id, type, base_model)
        return self._list_page(*_CKPT_LIST, filters, after=after, limit=limit, deadline=deadline)

    def list_checkpoints(
        self,
        *,
        session_id: str | None = None,
        type: CheckpointType | str | None = None,
        base_model: str | None = None,
        page_size: int = 100,
        deadline: float | None = None,
        on_skipped: Callable[[SkippedItem], None] | None = None,
    ) -> Iterator[Checkpoint]:
        """Every matching checkpoint, newest first."""
        filters = _checkpoint_filters(session_id, type, base_model)
        return self._iterate(*_CKPT_LIST, filters, page_size, deadline, on_skipped)

    def get_checkpoint(self, checkpoint_id: str, *, deadline: float | None = None) -> Checkpoint:
        path = f"{_CHECKPOINTS}/{segment(checkpoint_id, 'checkpoint_id')}"
        return self._request("GET", path, Checkpoint, deadline=deadline)

    def get_checkpoint_download(
        self,
        checkpoint_id: str,
        variant: CheckpointVariant | str = CheckpointVariant.ADAPTER,
        *,
        deadline: float | None = None,
    ) -> CheckpointDownload:
        """Presigned URLs (own auth) of an inference checkpoint's files; ADAPTER needs LoRA."""
        path = f"{_CHECKPOINTS}/{segment(checkpoint_id, 'checkpoint_id')}/download"
        params = {"variant": _constant(variant, CheckpointVariant, "variant")}
        return self._request("GET", path, CheckpointDownload, params=params, deadline=deadline)

    def create_model_resource(
        self,
        base_model: str,
        *,
        lora_enabled: bool | None = None,
        compute_config: JSON | None = None,
        optimizer_config: JSON | None = None,
        inactive_timeout: int | None = None,
        base_weights_ref: str | None = None,
        deadline: float | None = None,
    ) -> ModelResource:
        """Provision GPUs (billed while READY). Not retried once it may have been sent."""
        body = compact(
            base_model=base_model,
            lora_enabled=lora_enabled,
            compute_config=compute_config,
            optimizer_config=optimizer_config,
            inactive_timeout=inactive_timeout,
            base_weights_ref=base_weights_ref,
        )
        return self._request(
            "POST", _RESOURCES, ModelResource, json=body, idempotent=False, deadline=deadline
        )

    def estimate_model_resource_cost(
        self,
        base_model: str,
        *,
        lora_enabled: bool | None = None,
        compute_config: JSON | None = None,
        optimizer_config: JSON | None = None,
        inactive_timeout: int | None = None,
        base_weights_ref: str | None = None,
        deadline: float | None = None,
    ) -> CostEstimate:
        """Price of a resource with this configuration."""
        body = compact(
            base_model=base_model,
            lora_enabled=lora_enabled,
            compute_config=compute_config,
            optimizer_config=optimizer_config,
            inactive_timeout=inactive_timeout,
            base_weights_ref=base_weights_ref,
        )
        path = f"{_RESOURCES}/estimate-cost"
        return self._request(
            "POST", path, CostEstimate, json=body, idempotent=True, deadline=deadline
        )

    def get_model_resource(
        self, model_resources_id: str, *, deadline: float | None = None
    ) -> ModelResource:
        path = f"{_RESOURCES}/{segment(model_resources_id, 'model_resources_id')}"
        return self._request("GET", path, ModelResource, deadline=deadline)

    def list_model_resources_page(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        status: ResourceStatusFilter = None,
        created_by: str | None = None,
        deadline: float | None = None,
    ) -> Page[ModelResource]:
        """One page of the caller's model resources (order undocumented)."""
        filters = compact(status=_status_query(status, ModelResourceStatus), created_by=created_by)
        return self._list_page(*_RES_LIST, filters, after=after, limit=limit, deadline=deadline)

    def list_model_resources(
        self,
        *,
        status: ResourceStatusFilter = None,
        created_by: str | None = None,
        page_size: int = 100,
        deadline: float | None = None,
        on_skipped: Callable[[SkippedItem], None] | None = None,
    ) -> Iterator[ModelResource]:
        filters = compact(status=_status_query(status, ModelResourceStatus), created_by=created_by)
        return self._iterate(*_RES_LIST, filters, page_size, deadline, on_skipped)

    def extend_model_resource_expiry(
        self, model_resources_id: str, seconds: int, *, deadline: float | None = None
    ) -> ModelResource:
        """Keep a READY resource up at least ``seconds`` from now (refused if not READY)."""
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
            raise ValueError(f"seconds must be a positive int, got {seconds!r}")
        path = f"{_RESOURCES}/{segment(model_resources_id, 'model_resources_id')}/extend-expiry"
        body = {"seconds": seconds}
        return self._request(
            "POST", path, ModelResource, json=body, idempotent=False, deadline=deadline
        )

    def stop_model_resource(
        self, model_resources_id: str, *, force: bool = False, deadline: float | None = None
    ) -> ModelResource:
        """Stop a resource (``force``: and every attached session, anyone's); a stopped one: 400."""
        path = f"{_RESOURCES}/{segment(model_resources_id, 'model_resources_id')}/stop"
        params = {"force": "true"} if force else None
        return self._request(
            "POST", path, ModelResource, params=params, idempotent=False, deadline=deadline
        )

    def list_supported_models(self, *, deadline: float | None = None) -> list[SupportedModel]:
        path = "/v1/rl/supported-models"
        return self._request("GET", path, Page[SupportedModel], deadline=deadline).data
