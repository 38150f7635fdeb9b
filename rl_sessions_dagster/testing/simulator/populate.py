"""Bulk creation of a realistic history (10k-100k sessions) in seconds.

Records are built directly — no locking, validation or index insertion per item — and the
indices are sorted once at the end. Histories look like a busy account: mostly finished
sessions (STOPPED / EXPIRED / ERROR, some failing at creation) spread over the past weeks on
stopped resources, plus ``active`` RUNNING sessions on READY LoRA resources.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from .constants import (
    CHECKPOINT_INFERENCE,
    CHECKPOINT_TRAINING,
    LORA_SESSION_CAP,
    NO_REGISTRY_MODELS,
    REGISTRATION_SHAPES,
    RESOURCE_READY,
    RESOURCE_STOPPED,
    SESSION_ERROR,
    SESSION_ERROR_MESSAGES,
    SESSION_ERROR_RESOURCE_AT_CAPACITY,
    SESSION_ERROR_RESOURCE_UNAVAILABLE,
    SESSION_ERROR_SESSION_FAILED,
    SESSION_ERROR_TIMED_OUT,
    SESSION_EXPIRED,
    SESSION_RUNNING,
    SESSION_STOPPED,
)
from .lifecycle import DEFAULT_LORA_CONFIG
from .state import US, Checkpoint, Resource, Session

if TYPE_CHECKING:
    from .world import SimulatedWorld

DEFAULT_BASE_MODELS = ("Qwen/Qwen3-8B", "Qwen/Qwen3.5-4B", "meta-llama/Llama-3.1-8B-Instruct")
TASKS = ("gsm8k", "math", "codegen", "tool-use", "summarize", "countdown")
SESSIONS_PER_OLD_RESOURCE = 20
HOUR = 3600 * US


def _id_factory(rng: random.Random) -> Any:
    bits = rng.getrandbits

    def new_id() -> str:
        n = bits(128)
        n = (n & ~(0xF000 << 64) | (0x4000 << 64)) & ~(0xC000 << 48) | (0x8000 << 48)
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    return new_id


def populate_world(
    world: SimulatedWorld,
    *,
    n_sessions: int,
    checkpoints_per_session: int,
    active: int,
    seed: int,
    days: float,
    training_checkpoints_per_session: int,
    registration_shapes: tuple[str | None, ...],
    base_models: tuple[str, ...] | None,
) -> dict[str, Any]:
    """Add ``n_sessions`` sessions (``active`` of them RUNNING) with exactly
    ``checkpoints_per_session`` inference and ``training_checkpoints_per_session`` training
    checkpoints each, except sessions that failed at creation (which have none).

    The caller holds the world lock. Ids come from an RNG seeded by ``seed`` and the world's
    size, so a seeded world populated the same way is identical and never collides.
    """
    started = time.perf_counter()
    for shape in registration_shapes:
        if shape not in REGISTRATION_SHAPES:
            raise ValueError(f"unknown registration shape {shape!r}")
    rng = random.Random(f"populate:{seed}:{len(world._sessions)}")
    new_id = _id_factory(rng)
    models = base_models or DEFAULT_BASE_MODELS
    now = world._now()
    span = max(int(days * 86400 * US), 2 * HOUR)
    n_active = max(0, min(active, n_sessions))
    n_old = n_sessions - n_active
    user, teammate = world.user_id, "user_teammate"
    timeout = 3600

    # Creation times of finished sessions, oldest first, so each old resource hosts a run of them.
    old_created = sorted(now - HOUR - rng.randrange(span) for _ in range(n_old))
    sessions: list[Session] = []
    checkpoints: list[Checkpoint] = []
    resources: list[Resource] = []
    stats = {"failed_at_creation": 0}

    def add_resource(created_at: int, status: str, lora: bool, model: str) -> Resource:
        r = Resource(
            id=new_id(),
            base_model=model,
            lora_enabled=lora,
            inactive_timeout=timeout,
            status=status,
            created_at=created_at,
            updated_at=created_at,
            created_by=user,
        )
        resources.append(r)
        return r

    def add_session(r: Resource, created: int, end: int, status: str, index: int) -> None:
        model = r.base_model
        shape = None if model in NO_REGISTRY_MODELS else rng.choice(registration_shapes)
        interval = rng.choice((5, 10, 20, 25, 50))
        s = Session(
            id=new_id(),
            resource_id=r.id,
            base_model=model,
            status=status,
            created_at=created,
            updated_at=end,
            created_by=user if rng.random() < 0.8 else teammate,
            shape=shape,
            int64_as_string=False,
            adapter=r.lora_enabled,
            display_name=f"{TASKS[index % len(TASKS)]}-{model.rsplit('/', 1)[-1]}-{index:06d}",
            lora=DEFAULT_LORA_CONFIG if r.lora_enabled else None,
        )
        if index % 2 == 0:
            run_id = f"{index:08x}"
            s.wandb = {
                "entity": "sim-org",
                "project": f"grpo-{TASKS[index % len(TASKS)]}",
                "run_name": s.display_name or "",
                "run_id": run_id,
                "url": f"https://wandb.ai/sim-org/grpo/runs/{run_id}",
            }
        n_ck = checkpoints_per_session
        if status == SESSION_ERROR:
            roll = rng.random()
            if roll < 0.3:
                code = SESSION_ERROR_RESOURCE_AT_CAPACITY
                n_ck = 0
                end = s.updated_at = created + 5 * US
                stats["failed_at_creation"] += 1
            elif roll < 0.6:
                code = SESSION_ERROR_TIMED_OUT
            elif roll < 0.8:
                code = SESSION_ERROR_RESOURCE_UNAVAILABLE
            else:
                code = SESSION_ERROR_SESSION_FAILED
            s.error = (code, SESSION_ERROR_MESSAGES[code], end)
        n_tr = training_checkpoints_per_session if n_ck else 0
        gap = max(1, (end - created) // (n_ck + 2))
        sid = s.id
        t = created
        for i in range(n_ck):
            t += gap + rng.randrange(gap // 4 + 1)
            if t >= end:
                t = end - 1
            ck = Checkpoint(new_id(), sid, CHECKPOINT_INFERENCE, (i + 1) * interval, t, shape, t)
            s.inference.append(ck)
            checkpoints.append(ck)
        for j in range(n_tr):
            step = (n_ck - n_tr + j + 1) * interval
            ct = max(created + 1, t - (n_tr - j) * US)
            ck = Checkpoint(new_id(), sid, CHECKPOINT_TRAINING, step, ct, shape, ct)
            s.training.append(ck)
            checkpoints.append(ck)
        s.step = s.trainer_step = n_ck * interval + (rng.randrange(interval) if n_ck else 0)
        s.target_wv = s.applied_wv = s.trainer_step
        sessions.append(s)
        r.session_ids.append(sid)

    # Finished history: runs of sessions on stopped resources.
    r: Resource | None = None
    for i, created in enumerate(old_created):
        if i % SESSIONS_PER_OLD_RESOURCE == 0:
            if r is not None:
                r.updated_at = r.last_activity + timeout * US
            r = add_resource(
                created - 120 * US, RESOURCE_STOPPED, rng.random() < 0.85, rng.choice(models)
            )
        assert r is not None
        roll = rng.random()
        status = (
            SESSION_STOPPED if roll < 0.7 else SESSION_EXPIRED if roll < 0.85 else SESSION_ERROR
        )
        end = min(created + rng.randrange(HOUR // 2, 72 * HOUR), now - 60 * US)
        add_session(r, created, end, status, len(world._sessions) + i)
        r.last_activity = max(r.last_activity, end)
    if r is not None:
        r.updated_at = max(r.updated_at, r.last_activity + timeout * US)

    # Active sessions: RUNNING on READY LoRA resources, leaving a free slot on each.
    ready: list[Resource] = []
    per_resource = LORA_SESSION_CAP - 1
    for j in range(n_active):
        if j % per_resource == 0:
            r = add_resource(
                now - rng.randrange(2 * HOUR, 12 * HOUR), RESOURCE_READY, True, rng.choice(models)
            )
            r.last_activity = now - rng.randrange(300 * US)
            ready.append(r)
        assert r is not None
        created = r.created_at + rng.randrange(60 * US, HOUR)
        add_session(
            r,
            created,
            now - rng.randrange(1, 120 * US),
            SESSION_RUNNING,
            len(world._sessions) + n_old + j,
        )

    # Bulk-load the records and indices (one sort per index instead of one insort per item).
    world._resources.update((x.id, x) for x in resources)
    world._sessions.update((x.id, x) for x in sessions)
    world._checkpoints.update((x.id, x) for x in checkpoints)
    world._resource_index.load((world._resource_key(x), x.status) for x in resources)
    world._session_index.load((world._session_key(x), x.status) for x in sessions)
    world._checkpoint_index.load(((x.created_at, x.id), x.kind) for x in checkpoints)
    for x in ready:
        world._schedule(x.expires_at() or now, "resource_expiry", x.id)
    world._chat_names = None
    return {
        "sessions": len(sessions),
        "active": n_active,
        "checkpoints": len(checkpoints),
        "model_resources": len(resources),
        "failed_at_creation": stats["failed_at_creation"],
        "seconds": round(time.perf_counter() - started, 3),
    }
