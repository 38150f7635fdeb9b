"""Wire constants of the Together RL API, spelled exactly as the real service spells them.

Kept in one place so the world, the serializers and the HTTP layer agree on every enum value,
and so tests can import the same names instead of repeating string literals.
"""

from __future__ import annotations

from typing import Any, Final

# --- training sessions -------------------------------------------------------------------------
SESSION_CREATING: Final = "TRAINING_SESSION_STATUS_CREATING"
SESSION_RUNNING: Final = "TRAINING_SESSION_STATUS_RUNNING"
SESSION_STOPPING: Final = "TRAINING_SESSION_STATUS_STOPPING"
SESSION_STOPPED: Final = "TRAINING_SESSION_STATUS_STOPPED"
SESSION_ERROR: Final = "TRAINING_SESSION_STATUS_ERROR"
SESSION_EXPIRED: Final = "TRAINING_SESSION_STATUS_EXPIRED"

#: Values accepted by the ``status`` list filter (UNSPECIFIED is not accepted by the service).
SESSION_STATUSES: Final = (
    SESSION_CREATING,
    SESSION_RUNNING,
    SESSION_STOPPING,
    SESSION_STOPPED,
    SESSION_ERROR,
    SESSION_EXPIRED,
)
#: No transition leaves these; STOPPING is transitional (it still holds a LoRA slot).
SESSION_TERMINAL: Final = frozenset({SESSION_STOPPED, SESSION_ERROR, SESSION_EXPIRED})

SESSION_ERROR_RESOURCE_UNAVAILABLE: Final = "TRAINING_SESSION_ERROR_CODE_RESOURCE_UNAVAILABLE"
SESSION_ERROR_RESOURCE_AT_CAPACITY: Final = "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
SESSION_ERROR_TIMED_OUT: Final = "TRAINING_SESSION_ERROR_CODE_TIMED_OUT"
SESSION_ERROR_SESSION_FAILED: Final = "TRAINING_SESSION_ERROR_CODE_SESSION_FAILED"
SESSION_ERROR_CODES: Final = (
    SESSION_ERROR_RESOURCE_UNAVAILABLE,
    SESSION_ERROR_RESOURCE_AT_CAPACITY,
    SESSION_ERROR_TIMED_OUT,
    SESSION_ERROR_SESSION_FAILED,
)
#: Default human messages per error code (the capacity one is the documented example text).
SESSION_ERROR_MESSAGES: Final = {
    SESSION_ERROR_RESOURCE_UNAVAILABLE: "The model resource this session runs on is unavailable.",
    SESSION_ERROR_RESOURCE_AT_CAPACITY: (
        "The session could not start because the selected resource has no available capacity."
    ),
    SESSION_ERROR_TIMED_OUT: "The session timed out.",
    SESSION_ERROR_SESSION_FAILED: "The training session failed.",
}

# --- model resources ---------------------------------------------------------------------------
RESOURCE_PENDING: Final = "MODEL_RESOURCES_STATUS_PENDING"
RESOURCE_CREATING: Final = "MODEL_RESOURCES_STATUS_CREATING"
RESOURCE_READY: Final = "MODEL_RESOURCES_STATUS_READY"
RESOURCE_STOPPING: Final = "MODEL_RESOURCES_STATUS_STOPPING"
RESOURCE_STOPPED: Final = "MODEL_RESOURCES_STATUS_STOPPED"
RESOURCE_ERROR: Final = "MODEL_RESOURCES_STATUS_ERROR"
RESOURCE_STATUSES: Final = (
    RESOURCE_PENDING,
    RESOURCE_CREATING,
    RESOURCE_READY,
    RESOURCE_STOPPING,
    RESOURCE_STOPPED,
    RESOURCE_ERROR,
)
RESOURCE_ERROR_PROVISIONING_FAILED: Final = "MODEL_RESOURCES_ERROR_CODE_PROVISIONING_FAILED"
RESOURCE_ERROR_CODES: Final = (
    "MODEL_RESOURCES_ERROR_CODE_CAPACITY_WAIT_TIMEOUT",
    RESOURCE_ERROR_PROVISIONING_FAILED,
    "MODEL_RESOURCES_ERROR_CODE_RESOURCE_UNAVAILABLE",
)
#: Concurrent non-terminal sessions one resource hosts (HTTP create beyond this → 429).
LORA_SESSION_CAP: Final = 5
FULL_WEIGHT_SESSION_CAP: Final = 1

# --- checkpoints -------------------------------------------------------------------------------
CHECKPOINT_INFERENCE: Final = "CHECKPOINT_TYPE_INFERENCE"
CHECKPOINT_TRAINING: Final = "CHECKPOINT_TYPE_TRAINING"
CHECKPOINT_TYPES: Final = (CHECKPOINT_INFERENCE, CHECKPOINT_TRAINING)
VARIANT_MERGED: Final = "CHECKPOINT_VARIANT_MERGED"
VARIANT_ADAPTER: Final = "CHECKPOINT_VARIANT_ADAPTER"

#: Registration shapes a session can emit (see the API reference §3.3); ``None`` = never registers.
SHAPE_CURRENT: Final = "current"
SHAPE_OBJECT_IDS: Final = "object_ids"
SHAPE_LEGACY: Final = "legacy"
REGISTRATION_SHAPES: Final = (SHAPE_CURRENT, SHAPE_OBJECT_IDS, SHAPE_LEGACY, None)

# --- operations --------------------------------------------------------------------------------
OP_PENDING: Final = "TRAINING_OPERATION_STATUS_PENDING"
OP_RUNNING: Final = "TRAINING_OPERATION_STATUS_RUNNING"
OP_COMPLETED: Final = "TRAINING_OPERATION_STATUS_COMPLETED"
OP_FAILED: Final = "TRAINING_OPERATION_STATUS_FAILED"
OP_ERROR_SESSION_NOT_ACTIVE: Final = "TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE"
OP_ERROR_INTERNAL: Final = "TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR"
OPERATION_KINDS: Final = (
    "forward-backward",
    "custom-forward-backward",
    "optim-step",
    "weights-sync",
    "sample",
    "inference-checkpoint",
    "training-checkpoint",
)
WEIGHT_SYNC_TYPES: Final = (
    "WEIGHT_SYNC_TYPE_SYNCHRONOUS",
    "WEIGHT_SYNC_TYPE_BACKGROUND_PUBLISH",
    "WEIGHT_SYNC_TYPE_PIPELINE",
)

# --- supported models --------------------------------------------------------------------------
DEFAULT_BASE_MODEL: Final = "Qwen/Qwen3-8B"
DEFAULT_GPU_TYPE: Final = "B200-SXM"
#: Base models whose checkpoints are never uploaded to the registry (no ``registration``).
NO_REGISTRY_MODELS: Final = frozenset({"MiniMaxAI/MiniMax-M3"})
#: (base_model, context_length, lora max rank or 0, full-weight supported, price per GPU-hour)
_MODEL_TABLE: Final = (
    ("Qwen/Qwen3-0.6B", 32768, 128, True, 3.2),
    ("Qwen/Qwen3-8B", 32768, 128, True, 6.4),
    ("Qwen/Qwen3.5-4B", 65536, 128, True, 4.8),
    ("Qwen/Qwen3-32B", 32768, 64, False, 25.6),
    ("meta-llama/Llama-3.1-8B-Instruct", 131072, 128, True, 6.4),
    ("MiniMaxAI/MiniMax-M3", 131072, 32, False, 51.2),
)


def _supported_model(name: str, ctx: int, max_rank: int, full: bool) -> dict[str, Any]:
    trainer: dict[str, Any] = {}
    if full:
        trainer["full"] = {"max_batch_size": 256, "max_seq_length": ctx}
    if max_rank:
        trainer["lora"] = {"max_batch_size": 512, "max_rank": max_rank, "max_seq_length": ctx}
    return {
        "base_model": name,
        "default_gpu_type": DEFAULT_GPU_TYPE,
        "compute_configs": [
            {
                "gpu_type": DEFAULT_GPU_TYPE,
                "generator_config": {
                    "context_length": ctx,
                    "sampling_defaults": {
                        "logprobs": 1,
                        "max_tokens": 1024,
                        "n": 1,
                        "temperature": 1.0,
                    },
                },
                "trainer_config": trainer,
            }
        ],
    }


SUPPORTED_MODELS: Final = tuple(
    _supported_model(name, ctx, rank, full) for name, ctx, rank, full, _ in _MODEL_TABLE
)
SUPPORTED_MODEL_NAMES: Final = frozenset(m[0] for m in _MODEL_TABLE)
PRICE_PER_GPU_HOUR: Final = {m[0]: m[4] for m in _MODEL_TABLE}

# --- short names -------------------------------------------------------------------------------
_PREFIXES: Final = {
    "session": "TRAINING_SESSION_STATUS_",
    "resource": "MODEL_RESOURCES_STATUS_",
}


def session_status(name: str) -> str:
    """Expand a short session status (``"RUNNING"``) to its wire constant; others pass through."""
    full = _PREFIXES["session"] + name.upper()
    return full if full in SESSION_STATUSES else name


def resource_status(name: str) -> str:
    """Expand a short resource status (``"READY"``) to its wire constant; others pass through."""
    full = _PREFIXES["resource"] + name.upper()
    return full if full in RESOURCE_STATUSES else name
