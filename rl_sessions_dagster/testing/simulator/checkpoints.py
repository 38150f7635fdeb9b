"""Checkpoints of the world: adding inference/training checkpoints, registration (and its lag),
and the name index chat completions use to find a registered checkpoint.

A checkpoint's registration shape is fixed when it is created (the session's shape unless
overridden), so a session can mix shapes the way a long-lived account's history does.
"""

from __future__ import annotations

from .constants import CHECKPOINT_INFERENCE, CHECKPOINT_TRAINING, REGISTRATION_SHAPES
from .state import Checkpoint, Session, WorldBase, locked
from .wire import chat_names

#: Sentinel for "use the session's / world's default registration shape".
DEFAULT = "default"


class CheckpointsMixin(WorldBase):
    """Create and register checkpoints (always under the world lock)."""

    registration_delay: float

    @locked
    def add_inference_checkpoint(
        self,
        session_id: str,
        *,
        step: int | None = None,
        registration_shape: str | None = DEFAULT,
        registered: bool = True,
    ) -> str:
        """Append an inference checkpoint (at the session's step by default). ``registered=False``
        leaves it without registration until :meth:`register_checkpoint` (registration lag)."""
        s = self._session(session_id)
        ck = self._add_checkpoint(s, CHECKPOINT_INFERENCE, step, registration_shape, registered)
        return ck.id

    @locked
    def add_training_checkpoint(
        self, session_id: str, *, step: int | None = None, registered: bool = True
    ) -> str:
        """Append a training checkpoint (registered only in the two newer shapes)."""
        s = self._session(session_id)
        return self._add_checkpoint(s, CHECKPOINT_TRAINING, step, DEFAULT, registered).id

    def _add_checkpoint(
        self, s: Session, kind: str, step: int | None, shape: str | None, registered: bool
    ) -> Checkpoint:
        if shape == DEFAULT:
            shape = s.shape
        if shape not in REGISTRATION_SHAPES:
            raise ValueError(
                f"registration_shape must be one of {REGISTRATION_SHAPES}, not {shape!r}"
            )
        now = self._now()
        ck = Checkpoint(
            id=self._new_id(),
            session_id=s.id,
            kind=kind,
            step=s.step if step is None else step,
            created_at=now,
            shape=shape,
            registered_at=now if registered and shape is not None else None,
        )
        self._checkpoints[ck.id] = ck
        self._checkpoint_index.add(self._checkpoint_key(ck), kind)
        (s.inference if kind == CHECKPOINT_INFERENCE else s.training).append(ck)
        self._touch_session(s, now)
        if ck.registered_at is not None:
            self._index_chat_names(ck, s)
        return ck

    @locked
    def register_checkpoint(self, checkpoint_id: str) -> None:
        """Register a lagging checkpoint now (its session's ``updated_at`` moves too)."""
        ck = self._checkpoint(checkpoint_id)
        if ck.shape is None:
            raise ValueError(f"checkpoint {ck.id} uses no registration shape; it cannot register")
        self._register(ck, self._now())

    def _register(self, ck: Checkpoint, at: int) -> None:
        if ck.registered_at is not None:
            return
        ck.registered_at = at
        ck.json = None
        s = self._sessions[ck.session_id]
        self._touch_session(s, at)
        self._index_chat_names(ck, s)

    def _index_chat_names(self, ck: Checkpoint, s: Session) -> None:
        if self._chat_names is not None:
            for name in chat_names(ck, s):
                self._chat_names[name] = ck.id
