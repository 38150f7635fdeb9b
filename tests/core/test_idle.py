"""The idle guard's pure selection: who is idle, since when, and what the policy permits."""

from datetime import UTC, datetime

from rl_sessions_dagster.api.models import ModelResource, TrainingSession
from rl_sessions_dagster.core.idle import (
    IdlePolicy,
    busy_resources,
    idle_candidates,
    idle_since,
)

T0 = 1_800_000_000_000


def ts(seconds: float) -> str:
    return datetime.fromtimestamp((T0 + seconds * 1000) / 1000, UTC).isoformat()


def res(rid: str, *, status="READY", updated=0, expires=None, timeout=3600, model="m/a"):
    doc = {"id": rid, "status": f"MODEL_RESOURCES_STATUS_{status}", "updated_at": ts(updated),
           "inactive_timeout": timeout, "base_model": model}  # fmt: skip
    if expires is not None:
        doc["expires_at"] = ts(expires)
    return ModelResource.model_validate(doc)


def test_idle_since_takes_the_latest_known_use():
    assert idle_since(res("r", updated=10)) == T0 + 10_000
    # published activity: expires_at - inactive_timeout
    assert idle_since(res("r", updated=10, expires=3600 + 500)) == T0 + 500_000
    assert idle_since(res("r", updated=10), last_session_end_ms=T0 + 900_000) == T0 + 900_000


def test_busy_counts_every_non_terminal_session_including_unknown_statuses():
    sessions = [
        TrainingSession.model_validate(
            {"id": "a", "status": "RUNNING", "model_resources_id": "r1"}
        ),
        TrainingSession.model_validate(
            {"id": "b", "status": "TRAINING_SESSION_STATUS_PAUSED", "model_resources_id": "r2"}
        ),
        TrainingSession.model_validate(
            {"id": "c", "status": "STOPPED", "model_resources_id": "r3"}
        ),
    ]
    assert busy_resources(sessions) == {"r1", "r2"}


def test_candidates_threshold_policy_and_order():
    now = T0 + 4000_000
    resources = [
        res("old", updated=0),
        res("older", updated=-100),
        res("young", updated=3900),
        res("busy", updated=0),
        res("pending", status="PENDING"),
        res("denied", updated=0),
        res("other-model", updated=0, model="m/b"),
    ]
    policy = IdlePolicy(idle_seconds=600, deny_ids=frozenset({"denied"}))
    got = idle_candidates(resources, {"busy"}, policy, now_ms=now)
    assert [c.resource.id for c in got] == ["older", "old", "other-model"]
    assert got[0].idle_ms(now) == 4100_000
    only_a = IdlePolicy(idle_seconds=600, allow_base_models=frozenset({"m/a"}))
    assert "other-model" not in [
        c.resource.id for c in idle_candidates(resources, set(), only_a, now_ms=now)
    ]
    deny_model = IdlePolicy(idle_seconds=600, allow_ids=frozenset({"old"}),
                            deny_base_models=frozenset({"m/a"}))  # fmt: skip
    assert idle_candidates(resources, set(), deny_model, now_ms=now) == []
