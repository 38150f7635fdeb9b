"""A realistic history of 10k-100k sessions in seconds: records built directly, each index
sorted once. Mostly finished sessions over past weeks on stopped resources, plus ``active``
RUNNING ones on READY LoRA resources, each with a free slot."""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from . import wire
from .lifecycle import DEFAULT_LORA_CONFIG, new_uuid
from .state import Checkpoint, Resource, Session
from .wire import US

if TYPE_CHECKING:
    from .world import SimulatedWorld

DEFAULT_BASE_MODELS = ("Qwen/Qwen3-8B", "Qwen/Qwen3.5-4B", "meta-llama/Llama-3.1-8B-Instruct")
TASKS = ("gsm8k", "math", "codegen", "tool-use", "summarize", "countdown")
HOUR = 3600 * US
TIMEOUT = 3600


def populate_world(
    world: SimulatedWorld, n_sessions: int = 10_000, checkpoints_per_session: int = 10,
    active: int = 50, *, seed: int | None = None, days: float = 28.0,
    training_checkpoints_per_session: int = 1,
    registration_shapes: tuple[str | None, ...] = ("current",),
) -> dict[str, Any]:  # fmt: skip
    """``world.populate``: bulk-create a realistic history; returns counts and seconds. Sessions
    that failed at creation have no checkpoints. Ids are seeded by ``seed`` (default: the
    world's) and the world's size: the same calls give the same world, never a clash."""
    started, seed = time.perf_counter(), world.seed if seed is None else seed
    shapes, training_per_session = registration_shapes, training_checkpoints_per_session
    for shape in shapes:
        wire.check_shape(shape)
    rng = random.Random(f"populate:{seed}:{len(world._sessions)}")
    models, now, base = DEFAULT_BASE_MODELS, world._now(), len(world._sessions)
    n_active = max(0, min(active, n_sessions))
    n_old = n_sessions - n_active
    sessions: list[Session] = []
    checkpoints: list[Checkpoint] = []
    resources: list[Resource] = []

    def add_resource(at: int, status: str, lora: bool, model: str) -> Resource:
        r = Resource(new_uuid(rng), model, lora, TIMEOUT, status, at, at, world.user_id)
        resources.append(r)
        return r

    def add_session(r: Resource, created: int, end: int, status: str, index: int) -> None:
        model, task = r.base_model, TASKS[index % len(TASKS)]
        shape = None if model in wire.NO_REGISTRY_MODELS else rng.choice(shapes)
        interval = rng.choice((5, 10, 20, 25, 50))
        sid = new_uuid(rng)  # before the creator's roll: the same seed gives the same ids as ever
        user = world.user_id if rng.random() < 0.8 else "user_teammate"
        s = Session(sid, r.id, model, status, created, end, user, shape, r.lora_enabled,
                    display_name=f"{task}-{model.rsplit('/', 1)[-1]}-{index:06d}",
                    lora=DEFAULT_LORA_CONFIG if r.lora_enabled else None)  # fmt: skip
        if index % 2 == 0:
            run = f"{index:08x}"
            s.wandb = {"entity": "sim-org", "project": f"grpo-{task}", "run_name": s.display_name or "",
                       "run_id": run, "url": f"https://wandb.ai/sim-org/grpo/runs/{run}"}  # fmt: skip
        n_ck = checkpoints_per_session
        if status == wire.SESSION_ERROR:
            roll = rng.random()
            codes = (wire.AT_CAPACITY, wire.TIMED_OUT, wire.UNAVAILABLE, wire.SESSION_FAILED)
            code = codes[(roll >= 0.3) + (roll >= 0.6) + (roll >= 0.8)]
            if code == wire.AT_CAPACITY:
                n_ck = 0  # failed at creation
                end = s.updated_at = created + 5 * US
            s.error = (code, wire.ERROR_MESSAGES[code], end)
        n_tr = training_per_session if n_ck else 0

        def checkpoint(kind: str, step: int, at: int) -> Checkpoint:
            return Checkpoint(new_uuid(rng), s.id, kind, step, at, shape, at)

        gap, t = max(1, (end - created) // (n_ck + 2)), created
        for i in range(n_ck):
            t = min(t + gap + rng.randrange(gap // 4 + 1), end - 1)
            s.inference.append(checkpoint(wire.CHECKPOINT_INFERENCE, (i + 1) * interval, t))
        for j in range(n_tr):
            ct = max(created + 1, t - (n_tr - j) * US)
            step = (n_ck - n_tr + j + 1) * interval
            s.training.append(checkpoint(wire.CHECKPOINT_TRAINING, step, ct))
        checkpoints.extend(s.inference + s.training)
        step = n_ck * interval + (rng.randrange(interval) if n_ck else 0)
        s.step = s.trainer_step = s.target_wv = s.applied_wv = step
        sessions.append(s)
        r.session_ids.append(s.id)

    # Finished history: runs of 20 sessions (oldest first) on stopped resources.
    span = max(int(days * 86400 * US), 2 * HOUR)
    old_created = sorted(now - HOUR - rng.randrange(span) for _ in range(n_old))
    r: Resource | None = None
    for i, created in enumerate(old_created):
        if i % 20 == 0:
            if r is not None:
                r.updated_at = r.last_activity + TIMEOUT * US
            lora = rng.random() < 0.85
            r = add_resource(created - 120 * US, wire.RESOURCE_STOPPED, lora, rng.choice(models))
        assert r is not None
        roll = rng.random()
        ends = (wire.SESSION_STOPPED, wire.SESSION_EXPIRED, wire.SESSION_ERROR)
        status = ends[(roll >= 0.7) + (roll >= 0.85)]
        end = min(created + rng.randrange(HOUR // 2, 72 * HOUR), now - 60 * US)
        add_session(r, created, end, status, base + i)
        r.last_activity = max(r.last_activity, end)
    if r is not None:
        r.updated_at = max(r.updated_at, r.last_activity + TIMEOUT * US)
    ready: list[Resource] = []
    for j in range(n_active):
        if j % (wire.LORA_SESSION_CAP - 1) == 0:
            created = now - rng.randrange(2 * HOUR, 12 * HOUR)
            r = add_resource(created, wire.RESOURCE_READY, True, rng.choice(models))
            r.last_activity = now - rng.randrange(300 * US)
            ready.append(r)
        assert r is not None
        created = r.created_at + rng.randrange(60 * US, HOUR)
        end = now - rng.randrange(1, 120 * US)
        add_session(r, created, end, wire.SESSION_RUNNING, base + n_old + j)

    world._resources.update((x.id, x) for x in resources)
    world._sessions.update((x.id, x) for x in sessions)
    world._checkpoints.update((x.id, x) for x in checkpoints)
    world._resource_index.load((world._key(x), x.status) for x in resources)
    world._session_index.load((world._key(x), x.status) for x in sessions)
    world._checkpoint_index.load(((x.created_at, x.id), x.kind) for x in checkpoints)
    for x in ready:
        world._expire_when_idle(x, x.expires_at() or now)
    world._chat_names = None
    failed_at_creation = sum(1 for s in sessions if s.error and s.error[0] == wire.AT_CAPACITY)
    return {"sessions": len(sessions), "active": n_active, "checkpoints": len(checkpoints),
            "model_resources": len(resources), "failed_at_creation": failed_at_creation,
            "seconds": round(time.perf_counter() - started, 3)}  # fmt: skip
