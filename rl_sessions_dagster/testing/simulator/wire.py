"""World records → JSON in the wire shapes of the Together RL API.

Session bytes are cached on the record (``Session.json``) and pages are built by joining cached
fragments, so serving 100 sessions x 10 checkpoints costs microseconds once warm. Registration
shapes (current / object_ids / legacy / none) and int64-as-string are applied here and only here.
"""

from __future__ import annotations

import json
import time
from hashlib import blake2b
from typing import Any

from .constants import (
    CHECKPOINT_INFERENCE,
    CHECKPOINT_TRAINING,
    RESOURCE_PENDING,
    SHAPE_CURRENT,
    SHAPE_OBJECT_IDS,
)
from .state import Checkpoint, Operation, Resource, Session

_strftime, _gmtime = time.strftime, time.gmtime
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes."""
    return _dumps(obj).encode()


def fmt_ts(us: int) -> str:
    """RFC 3339 UTC with ``Z``: microseconds when non-zero, else whole seconds (as proto-JSON)."""
    secs, frac = divmod(us, 1_000_000)
    base = _strftime("%Y-%m-%dT%H:%M:%S", _gmtime(secs))
    return f"{base}.{frac:06d}Z" if frac else base + "Z"


def int64(value: int, as_string: bool) -> int | str:
    """An int64 field: a JSON number, or a JSON string as proto-JSON emits it."""
    return str(value) if as_string else value


# --- registration ------------------------------------------------------------------------------
def registry_artifact(ckpt_id: str, what: str) -> tuple[str, str]:
    """Registry ``(ml_…, rv_…)`` ids of a checkpoint, derived from its id (nothing to store)."""
    h = blake2b(f"{what}:{ckpt_id}".encode(), digest_size=20).hexdigest()
    return "ml_" + h[:20], "rv_" + h[20:]


def model_name(ck: Checkpoint, s: Session) -> str:
    """Registered model name of the older shapes (``user/<base>-rl-<id8>-step-N``)."""
    return f"{s.created_by}/{s.base_model.rsplit('/', 1)[-1]}-rl-{ck.id[:8]}-step-{ck.step}"


def inference_registration(ck: Checkpoint, s: Session) -> dict[str, Any] | None:
    """The ``registration`` object of an inference checkpoint in its shape, or None if absent."""
    if ck.registered_at is None or ck.shape is None:
        return None
    if ck.shape == SHAPE_CURRENT:
        mid, rev = registry_artifact(ck.id, "adapter" if s.adapter else "model")
        return {"adapter" if s.adapter else "model": {"id": mid, "revision_id": rev}}
    reg: dict[str, Any] = {
        "model_name": model_name(ck, s),
        "registered_at": fmt_ts(ck.registered_at),
    }
    if ck.shape == SHAPE_OBJECT_IDS:
        reg["model_object_id"], reg["model_object_revision_id"] = registry_artifact(ck.id, "model")
        if s.adapter:
            aid, arev = registry_artifact(ck.id, "adapter")
            reg["adapter_object_id"], reg["adapter_object_revision_id"] = aid, arev
    return reg


def training_registration(ck: Checkpoint) -> dict[str, Any] | None:
    """``{id, revision_id}`` of a training checkpoint (only the two newer shapes have one)."""
    if ck.registered_at is None or ck.shape not in (SHAPE_CURRENT, SHAPE_OBJECT_IDS):
        return None
    mid, rev = registry_artifact(ck.id, "training")
    return {"id": mid, "revision_id": rev}


def chat_names(ck: Checkpoint, s: Session) -> list[str]:
    """Names under which ``/v1/chat/completions`` serves this checkpoint (what its JSON exposes)."""
    reg = inference_registration(ck, s) if ck.is_inference else None
    if reg is None:
        return []
    names = [
        str(reg[k]) for k in ("model_name", "model_object_id", "adapter_object_id") if k in reg
    ]
    names += [reg[k]["id"] for k in ("model", "adapter") if k in reg]
    return names


# --- checkpoints -------------------------------------------------------------------------------
def checkpoint_in_session(ck: Checkpoint, s: Session) -> dict[str, Any]:
    """``InferenceCheckpoint`` / ``TrainingCheckpoint`` as nested in a session."""
    d: dict[str, Any] = {
        "id": ck.id,
        "created_at": fmt_ts(ck.created_at),
        "step": int64(ck.step, s.int64_as_string),
    }
    reg = inference_registration(ck, s) if ck.is_inference else training_registration(ck)
    if reg is not None:
        d["registration"] = reg
    return d


def checkpoint_dict(ck: Checkpoint, s: Session) -> dict[str, Any]:
    """``Checkpoint`` of ``/v1/rl/checkpoints`` (registration in the checkpoint's own shape)."""
    d: dict[str, Any] = {
        "id": ck.id,
        "base_model": s.base_model,
        "created_at": fmt_ts(ck.created_at),
        "session_id": s.id,
        "step": int64(ck.step, s.int64_as_string),
        "type": CHECKPOINT_INFERENCE if ck.is_inference else CHECKPOINT_TRAINING,
    }
    if ck.is_inference:
        reg = inference_registration(ck, s)
        if reg is not None:
            d["inference_registration"] = reg
    else:
        treg = training_registration(ck)
        if treg is not None:
            d["training_registration"] = treg
    if s.lora is not None and "rank" in s.lora:
        d["lora_rank"] = s.lora["rank"]
    return d


def checkpoint_bytes(ck: Checkpoint, s: Session) -> bytes:
    """Cached bytes of :func:`checkpoint_dict`."""
    b = ck.json
    if b is None:
        b = ck.json = dumps(checkpoint_dict(ck, s))
    return b


# --- sessions ----------------------------------------------------------------------------------
def session_dict(s: Session) -> dict[str, Any]:
    """``Session`` exactly as the SDK models it (JSON key ``model_resources_id``)."""
    as_str = s.int64_as_string
    d: dict[str, Any] = {"id": s.id}
    if s.display_name is not None:
        d["display_name"] = s.display_name
    d["status"] = s.status
    d["metadata"] = {"wandb": dict(s.wandb)} if s.wandb else {}
    if s.error is not None:
        code, message, occurred_at = s.error
        err: dict[str, Any] = {"code": code} if code is not None else {}
        err["message"] = message
        err["occurred_at"] = fmt_ts(occurred_at)
        d["error"] = err
    d["inference_checkpoints"] = [checkpoint_in_session(c, s) for c in s.inference]
    d["training_checkpoints"] = [checkpoint_in_session(c, s) for c in s.training]
    if s.resume_from is not None:
        d["resume_from_checkpoint_id"] = s.resume_from
    d["created_at"] = fmt_ts(s.created_at)
    d["updated_at"] = fmt_ts(s.updated_at)
    if s.lora is not None:
        lora = dict(s.lora)
        if "seed" in lora:
            lora["seed"] = int64(lora["seed"], as_str)
        d["lora_config"] = lora
    d["model_resources_id"] = s.resource_id
    d["base_model"] = s.base_model
    d["created_by"] = s.created_by
    d["step"] = int64(s.step, as_str)
    d["policy_state"] = {
        "applied_weights_version": int64(s.applied_wv, as_str),
        "pending_publish": s.pending_publish,
        "target_weights_version": int64(s.target_wv, as_str),
        "trainer_step": int64(s.trainer_step, as_str),
    }
    for name in s.drop_fields:
        d.pop(name, None)
    if s.extra_fields:
        d.update(s.extra_fields)
    return d


def session_bytes(s: Session) -> bytes:
    """Cached bytes of :func:`session_dict` (the cache is dropped whenever the session changes)."""
    b = s.json
    if b is None:
        b = s.json = dumps(session_dict(s))
    return b


# --- model resources ---------------------------------------------------------------------------
def resource_dict(r: Resource, queue_position: int | None = None) -> dict[str, Any]:
    """``ModelResources`` as the SDK models it."""
    d: dict[str, Any] = {
        "id": r.id,
        "base_model": r.base_model,
        "compute_config": {
            "num_generator_replicas": r.num_generator_replicas,
            "gpu_type": r.gpu_type,
        },
        "created_at": fmt_ts(r.created_at),
        "created_by": r.created_by,
        "inactive_timeout": r.inactive_timeout,
        "lora_enabled": r.lora_enabled,
        "optimizer_config": r.optimizer,
        "status": r.status,
        "status_details": (
            {"queue_position": queue_position or 1} if r.status == RESOURCE_PENDING else {}
        ),
        "updated_at": fmt_ts(r.updated_at),
    }
    if r.base_weights_ref is not None:
        d["base_weights_ref"] = r.base_weights_ref
    if r.error is not None:
        code, message, occurred_at = r.error
        err: dict[str, Any] = {"code": code} if code is not None else {}
        err["message"] = message
        err["occurred_at"] = fmt_ts(occurred_at)
        d["error"] = err
    expires = r.expires_at()
    if expires is not None:
        d["expires_at"] = fmt_ts(expires)
    return d


def resource_bytes(r: Resource) -> bytes:
    """Cached bytes of :func:`resource_dict`."""
    b = r.json
    if b is None:
        b = r.json = dumps(resource_dict(r))
    return b


# --- operations, pages -------------------------------------------------------------------------
def operation_dict(op: Operation) -> dict[str, Any]:
    """``{id, status, output?, error?}`` shared by all seven operation kinds."""
    d: dict[str, Any] = {"id": op.id, "status": op.status}
    if op.output is not None:
        d["output"] = op.output
    if op.error is not None:
        d["error"] = op.error
    return d


def page_bytes(fragments: list[bytes], limit: int, has_more: bool, next_cursor: str) -> bytes:
    """``{"data": [...], "meta": {limit, has_more, next_cursor}}`` from pre-serialized items."""
    meta = dumps({"limit": limit, "has_more": has_more, "next_cursor": next_cursor})
    return b'{"data":[' + b",".join(fragments) + b'],"meta":' + meta + b"}"
