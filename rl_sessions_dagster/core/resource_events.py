"""Model-resource events: what can happen to a GPU resource (:class:`ResourceEventKind`) and
one fact with the snapshot it was seen in (:class:`ResourceEvent`). The tracker that finds them
is :mod:`.resource_tracker`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..api.enums import ModelResourceStatus

if TYPE_CHECKING:  # the models load with the first tick, not with the definitions
    from ..api.models import ModelResource

#: Statuses a resource never leaves (there is no restart endpoint).
TERMINAL_RESOURCE_STATUSES = frozenset({ModelResourceStatus.STOPPED, ModelResourceStatus.ERROR})


class ResourceEventKind(str, Enum):
    """What happened to a model resource."""

    RESOURCE_READY = "resource_ready"
    RESOURCE_ERROR = "resource_error"
    RESOURCE_STOPPED = "resource_stopped"
    RESOURCE_EXPIRING = "resource_expiring"
    RESOURCE_QUEUED_LONG = "resource_queued_long"


ALL_RESOURCE_EVENT_KINDS = frozenset(ResourceEventKind)
_STATUS_EVENTS = {
    ModelResourceStatus.READY: ResourceEventKind.RESOURCE_READY,
    ModelResourceStatus.ERROR: ResourceEventKind.RESOURCE_ERROR,
    ModelResourceStatus.STOPPED: ResourceEventKind.RESOURCE_STOPPED,
}


@dataclass(frozen=True)
class ResourceEvent:
    """One fact about a model resource, with the snapshot it was seen in.

    ``expires_at_ms`` is set for ``resource_expiring``; ``queued_ms`` (how long it has been
    PENDING) for ``resource_queued_long``.
    """

    kind: ResourceEventKind
    resource: ModelResource
    previous_status: str | None = None
    expires_at_ms: int | None = None
    queued_ms: int | None = None

    @property
    def resource_id(self) -> str:
        return self.resource.id

    @property
    def queue_position(self) -> int | None:
        details = self.resource.status_details
        return details.queue_position if details is not None else None

    @property
    def error_code(self) -> str | None:
        """The raw error code (a code newer than this library is passed through as sent)."""
        return self.resource.error.code_raw if self.resource.error is not None else None

    @property
    def error_message(self) -> str | None:
        return self.resource.error.message if self.resource.error is not None else None

    @property
    def key(self) -> str:
        if self.kind is ResourceEventKind.RESOURCE_EXPIRING:
            return f"{self.kind.value}:{self.resource.id}:{self.expires_at_ms}"
        return f"{self.kind.value}:{self.resource.id}"

    def __repr__(self) -> str:
        return f"ResourceEvent({self.key})"
