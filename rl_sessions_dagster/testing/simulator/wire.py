"""The wire format: enum values as the service spells them, the error body, and every record's
JSON (registration shapes and int64-as-string applied here only). Bytes are cached on records
(``.json``, dropped on every change): a page of 100 warm sessions is a join of 100 strings."""

from __future__ import annotations

import json
import time
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .state import Checkpoint, Operation, Resource, Session

US: Final = 1_000_000  # the world keeps time in integer microseconds
OptStr = str | None

#: What the ``status`` list filters accept (UNSPECIFIED is refused by the service).
SESSION_STATUSES: Final = tuple(f"TRAINING_SESSION_STATUS_{s}" for s in
                                ("CREATING", "RUNNING", "STOPPING", "STOPPED", "ERROR", "EXPIRED"))  # fmt: skip
SESSION_CREATING, SESSION_RUNNING, SESSION_STOPPING, *_ = SESSION_STATUSES
SESSION_STOPPED, SESSION_ERROR, SESSION_EXPIRED = SESSION_STATUSES[3:]
#: No transition leaves these; STOPPING is transitional (it still holds a LoRA slot).
SESSION_TERMINAL: Final = frozenset({SESSION_STOPPED, SESSION_ERROR, SESSION_EXPIRED})
RESOURCE_STATUSES: Final = tuple(f"MODEL_RESOURCES_STATUS_{s}" for s in
                                 ("PENDING", "CREATING", "READY", "STOPPING", "STOPPED", "ERROR"))  # fmt: skip
RESOURCE_PENDING, RESOURCE_CREATING, RESOURCE_READY, *_ = RESOURCE_STATUSES
RESOURCE_STOPPING, RESOURCE_STOPPED, RESOURCE_ERROR = RESOURCE_STATUSES[3:]
AT_CAPACITY: Final = "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
UNAVAILABLE: Final = "TRAINING_SESSION_ERROR_CODE_RESOURCE_UNAVAILABLE"
TIMED_OUT: Final = "TRAINING_SESSION_ERROR_CODE_TIMED_OUT"
SESSION_FAILED: Final = "TRAINING_SESSION_ERROR_CODE_SESSION_FAILED"
#: Default messages per error code (the capacity one is the documented example text).
ERROR_MESSAGES: Final = {
    UNAVAILABLE: "The model resource this session runs on is unavailable.",
    AT_CAPACITY: (
        "The session could not start because the selected resource has no available capacity."
    ),
    TIMED_OUT: "The session timed out.",
    SESSION_FAILED: "The training session failed.",
}
PROVISIONING_FAILED: Final = "MODEL_RESOURCES_ERROR_CODE_PROVISIONING_FAILED"
#: Concurrent non-terminal sessions one resource hosts (HTTP create beyond this → 429).
LORA_SESSION_CAP: Final = 5

CHECKPOINT_INFERENCE: Final = "CHECKPOINT_TYPE_INFERENCE"
CHECKPOINT_TRAINING: Final = "CHECKPOINT_TYPE_TRAINING"
#: Files behind each download variant (the adapter one exists only for LoRA sessions).
VARIANT_FILES: Final = {
    "CHECKPOINT_VARIANT_MERGED": ("config.json", "model.safetensors"),
    "CHECKPOINT_VARIANT_ADAPTER": ("adapter_config.json", "adapter_model.safetensors"),
}
#: Registration shapes a session can emit (API reference §3.3); None never registers.
REGISTRATION_SHAPES: Final = ("current", "object_ids", "legacy", None)


def check_shape(shape: str | None) -> str | None:
    if shape not in REGISTRATION_SHAPES:
        raise ValueError(f"registration_shape must be one of {REGISTRATION_SHAPES}, not {shape!r}")
    return shape


OPERATION_KINDS: Final = ("forward-backward", "custom-forward-backward", "optim-step",
                          "weights-sync", "sample", "inference-checkpoint", "training-checkpoint")  # fmt: skip
WEIGHT_SYNC_TYPES: Final = ("WEIGHT_SYNC_TYPE_SYNCHRONOUS", "WEIGHT_SYNC_TYPE_BACKGROUND_PUBLISH",
                            "WEIGHT_SYNC_TYPE_PIPELINE")  # fmt: skip

DEFAULT_BASE_MODEL: Final = "Qwen/Qwen3-8B"
GPU_TYPES: Final = ("B200-SXM", "H100-80GB")
#: Base models whose checkpoints are never uploaded to the registry (no ``registration``).
NO_REGISTRY_MODELS: Final = frozenset({"MiniMaxAI/MiniMax-M3"})
#: base model: (context length, LoRA max rank or 0, full-weight supported, $ per GPU-hour)
MODELS: Final = {
    "Qwen/Qwen3-0.6B": (32768, 128, True, 3.2),
    "Qwen/Qwen3-8B": (32768, 128, True, 6.4),
    "Qwen/Qwen3.5-4B": (65536, 128, True, 4.8),
    "Qwen/Qwen3-32B": (32768, 64, False, 25.6),
    "meta-llama/Llama-3.1-8B-Instruct": (131072, 128, True, 6.4),
    "MiniMaxAI/MiniMax-M3": (131072, 32, False, 51.2),
}


def supported_model(name: str) -> dict[str, Any]:
    ctx, rank, full, _ = MODELS[name]
    trainer: dict[str, Any] = {}
    if full:
        trainer["full"] = {"max_batch_size": 256, "max_seq_length": ctx}
    if rank:
        trainer["lora"] = {"max_batch_size": 512, "max_rank": rank, "max_seq_length": ctx}
    sampling = {"logprobs": 1, "max_tokens": 1024, "n": 1, "temperature": 1.0}
    generator = {"context_length": ctx, "sampling_defaults": sampling}
    config = {"gpu_type": GPU_TYPES[0], "generator_config": generator, "trainer_config": trainer}
    return {"base_model": name, "default_gpu_type": GPU_TYPES[0], "compute_configs": [config]}


def full_status(name: str, statuses: tuple[str, ...]) -> str:
    """``"RUNNING"`` → that family's wire constant; other strings pass through raw."""
    prefix = statuses[0].rsplit("_", 1)[0] + "_"
    return prefix + name.upper() if prefix + name.upper() in statuses else name


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 408: "timeout_error", 409: "conflict_error",
                429: "rate_limit_error"}  # fmt: skip


def error_body(status: int, message: str, *, param: OptStr = None, code: OptStr = None) -> bytes:
    """The OpenAI-style ``{"error": {message, type, param, code}}`` body (5xx: ``server_error``)."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})


class SimulatorError(Exception):
    """An API error: HTTP ``status`` plus the ``ErrorData`` fields. World methods raise it too
    (unknown id → 404, full resource → 429), so HTTP forwards it unchanged."""

    def __init__(self, status: int, message: str, *, param: OptStr = None,
                 code: OptStr = None) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> bytes:
        return error_body(self.status, self.message, param=self.param, code=self.code)


def not_found(kind: str, ident: str, param: OptStr = None) -> SimulatorError:
    return SimulatorError(404, f"{kind} {ident!r} not found", param=param, code="not_found")


def bad_request(message: str, param: OptStr = None, code: str = "invalid_request") -> SimulatorError:  # fmt: skip
    return SimulatorError(400, message, param=param, code=code)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> bytes:
    return _encode(obj).encode()


def fmt_ts(us: int) -> str:
    """RFC 3339 UTC with ``Z``: microseconds when non-zero, else whole seconds (as proto-JSON)."""
    secs, frac = divmod(us, US)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    return f"{base}.{frac:06d}Z" if frac else base + "Z"


def int64(value: int, as_string: bool) -> int | str:
    return str(value) if as_string else value


def _error(info: tuple[str | None, str, int]) -> dict[str, Any]:
    code, message, at = info
    d = {"message": message, "occurred_at": fmt_ts(at)}
    return d if code is None else {"code": code, **d}  # code None: the older shape without it


def registry_artifact(ckpt_id: str, what: str) -> tuple[str, str]:
    """Registry ``(ml_…, rv_…)`` ids, derived from the checkpoint's id (nothing to store)."""
    h = blake2b(f"{what}:{ckpt_id}".encode(), digest_size=20).hexdigest()
    return "ml_" + h[:20], "rv_" + h[20:]


def registration(ck: Checkpoint, s: Session) -> dict[str, Any] | None:
    """The registry entry in the checkpoint's shape (legacy never registered training ones)."""
    if ck.registered_at is None or ck.shape is None:
        return None
    if not ck.is_inference:
        mid, rev = registry_artifact(ck.id, "training")
        return None if ck.shape == "legacy" else {"id": mid, "revision_id": rev}
    if ck.shape == "current":
        what = "adapter" if s.adapter else "model"
        mid, rev = registry_artifact(ck.id, what)
        return {what: {"id": mid, "revision_id": rev}}
    name = f"{s.created_by}/{s.base_model.rsplit('/', 1)[-1]}-rl-{ck.id[:8]}-step-{ck.step}"
    reg: dict[str, Any] = {"model_name": name, "registered_at": fmt_ts(ck.registered_at)}
    if ck.shape == "object_ids":
        for what in ("model", "adapter") if s.adapter else ("model",):
            ids = registry_artifact(ck.id, what)
            reg[f"{what}_object_id"], reg[f"{what}_object_revision_id"] = ids
    return reg


def chat_names(ck: Checkpoint, s: Session) -> list[str]:
    """Names under which ``/v1/chat/completions`` serves this checkpoint (what its JSON shows)."""
    reg = registration(ck, s) if ck.is_inference else None
    if reg is None:
        return []
    named = ("model_name", "model_object_id", "adapter_object_id")
    names = [str(reg[k]) for k in named if k in reg]
    return names + [reg[k]["id"] for k in ("model", "adapter") if k in reg]


def _present(**fields: Any) -> dict[str, Any]:
    """The fields in order, absent ones (None) left out, as the service omits them."""
    return {k: v for k, v in fields.items() if v is not None}


def checkpoint_in_session(ck: Checkpoint, s: Session) -> dict[str, Any]:
    return _present(id=ck.id, created_at=fmt_ts(ck.created_at), step=int64(ck.step, s.int64_as_string),
                    registration=registration(ck, s))  # fmt: skip


def checkpoint_bytes(ck: Checkpoint, s: Session) -> bytes:
    if ck.json is None:
        reg, lora = registration(ck, s), s.lora or {}
        d = _present(
            id=ck.id, base_model=s.base_model, created_at=fmt_ts(ck.created_at), session_id=s.id,
            step=int64(ck.step, s.int64_as_string), type=ck.kind,
            inference_registration=reg if ck.is_inference else None,
            training_registration=None if ck.is_inference else reg,
        )  # fmt: skip
        ck.json = dumps(d | {"lora_rank": lora["rank"]} if "rank" in lora else d)  # null shows
    return ck.json


def session_bytes(s: Session) -> bytes:
    if s.json is not None:
        return s.json
    as_str = s.int64_as_string
    lora = None if s.lora is None else {**s.lora, **({"seed": int64(s.lora["seed"], as_str)}
                                                     if "seed" in s.lora else {})}  # fmt: skip
    d = _present(
        id=s.id, display_name=s.display_name, status=s.status,
        metadata={"wandb": dict(s.wandb)} if s.wandb else {},
        error=None if s.error is None else _error(s.error),
        inference_checkpoints=[checkpoint_in_session(c, s) for c in s.inference],
        training_checkpoints=[checkpoint_in_session(c, s) for c in s.training],
        resume_from_checkpoint_id=s.resume_from,
        created_at=fmt_ts(s.created_at), updated_at=fmt_ts(s.updated_at), lora_config=lora,
        model_resources_id=s.resource_id, base_model=s.base_model, created_by=s.created_by,
        step=int64(s.step, as_str),
        policy_state={"applied_weights_version": int64(s.applied_wv, as_str),
                      "pending_publish": s.pending_publish,
                      "target_weights_version": int64(s.target_wv, as_str),
                      "trainer_step": int64(s.trainer_step, as_str)},
    )  # fmt: skip
    for name in s.drop_fields:
        d.pop(name, None)
    d.update(s.extra_fields or {})
    s.json = dumps(d)
    return s.json


def resource_bytes(r: Resource, queue_position: int = 1) -> bytes:
    """Not cached while PENDING: the queue position moves."""
    pending = r.status == RESOURCE_PENDING
    if r.json is None or pending:
        expires = r.expires_at()
        r.json = dumps(_present(
            id=r.id, base_model=r.base_model,
            compute_config={"num_generator_replicas": r.num_generator_replicas, "gpu_type": r.gpu_type},
            created_at=fmt_ts(r.created_at), created_by=r.created_by,
            inactive_timeout=r.inactive_timeout, lora_enabled=r.lora_enabled,
            optimizer_config=r.optimizer, status=r.status,
            status_details={"queue_position": queue_position} if pending else {},
            updated_at=fmt_ts(r.updated_at), base_weights_ref=r.base_weights_ref,
            error=None if r.error is None else _error(r.error),
            expires_at=None if expires is None else fmt_ts(expires),
        ))  # fmt: skip
    return r.json


def operation_dict(op: Operation) -> dict[str, Any]:
    return _present(id=op.id, status=op.status, output=op.output, error=op.error)
