"""The idle guard's pure selection: who is idle, since when, and what the policy permits."""

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.api.models import ModelResource, TrainingSession
from rl_sessions_dagster.core.idle import (
    IdlePolicy,
    IdleVerdict,
    ResourceUse,
    decide,
    idle_since,
    resource_use,
    worth_a_look,
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
    assert idle_since(res("r", updated=10), T0 + 900_000) == T0 + 900_000


def session(sid, status, created=0, updated=None):
    return TrainingSession.model_validate(
        {"id": sid, "status": status, "model_resources_id": "r", "created_at": ts(created),
         "updated_at": ts(created if updated is None else updated)}
    )  # fmt: skip


def test_anything_not_known_to_be_finished_is_live():
    use = resource_use(
        [
            session("a", "RUNNING"),
            session("b", "TRAINING_SESSION_STATUS_PAUSED"),
            session("c", "STOPPING"),
            session("d", "CREATING"),
            session("e", "STOPPED", 0, 50),
            session("f", "ERROR", 0, 60),
            session("g", "EXPIRED", 0, 70),
        ]
    )
    assert [sid for sid, _ in use.live] == ["a", "b", "c", "d"]
    assert dict(use.live)["b"] == "TRAINING_SESSION_STATUS_PAUSED"
    assert use.last_use_ms == T0 + 70_000 and use.busy


def test_force_lets_only_stopping_sessions_go():
    sessions = [session("c", "STOPPING", 0, 30), session("p", "TRAINING_SESSION_STATUS_PAUSED")]
    use = resource_use(sessions, force=True)
    assert use.live == (("p", "TRAINING_SESSION_STATUS_PAUSED"),)
    assert use.interruptible == 1 and use.last_use_ms == T0 + 30_000
    assert resource_use(sessions[:1], force=True) == ResourceUse((), 0, T0 + 30_000, 1)


def test_unreadable_sessions_keep_the_resource():
    use = resource_use([], unreadable=1)
    assert use.busy
    d = decide(res("r"), use, IdlePolicy(idle_seconds=60), now_ms=T0 + 10**9)
    assert d.verdict is IdleVerdict.UNREADABLE and not d.stop
    assert "could not be read" in d.explain()


def test_a_session_that_failed_a_moment_ago_is_a_use():
    r = res("r", updated=0)
    use = resource_use([session("x", "ERROR", 1000, 1001)])
    policy = IdlePolicy(idle_seconds=600)
    assert decide(r, use, policy, now_ms=T0 + 1002_000).verdict is IdleVerdict.RECENTLY_USED
    assert decide(r, use, policy, now_ms=T0 + 1601_000).stop  # exactly idle_seconds: stop


def test_verdicts_for_status_and_policy():
    policy = IdlePolicy(idle_seconds=600, deny_ids=frozenset({"denied"}))
    late = T0 + 10**9
    assert decide(res("p", status="PENDING"), ResourceUse(), policy, now_ms=late).verdict is (
        IdleVerdict.NOT_READY
    )
    assert decide(res("denied"), ResourceUse(), policy, now_ms=late).verdict is (
        IdleVerdict.NOT_PERMITTED
    )
    only_b = IdlePolicy(idle_seconds=600, allow_base_models=frozenset({"m/b"}))
    assert not decide(res("a"), ResourceUse(), only_b, now_ms=late).stop
    deny_model = IdlePolicy(idle_seconds=600, allow_ids=frozenset({"old"}),
                            deny_base_models=frozenset({"m/a"}))  # fmt: skip
    assert not decide(res("old"), ResourceUse(), deny_model, now_ms=late).stop
    assert decide(res("old"), ResourceUse(), policy, now_ms=late).stop


def test_worth_a_look_only_skips_what_sessions_cannot_change():
    policy = IdlePolicy(idle_seconds=600)
    assert worth_a_look(res("r", updated=0), policy, now_ms=T0 + 600_000)
    assert not worth_a_look(res("r", updated=0), policy, now_ms=T0 + 599_000)
    assert not worth_a_look(res("r", status="STOPPING"), policy, now_ms=T0 + 10**9)


KNOWN = ["CREATING", "RUNNING", "STOPPING", "STOPPED", "ERROR", "EXPIRED"]
statuses = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(["TRAINING_SESSION_STATUS_PAUSED", "TRAINING_SESSION_STATUS_QUEUED", "x"]),
)


@given(
    sessions=st.lists(st.tuples(statuses, st.integers(0, 5000), st.integers(0, 5000)), max_size=6),
    unreadable=st.integers(0, 2),
    ready_at=st.integers(0, 5000),
    now=st.integers(0, 8000),
    force=st.booleans(),
)
def test_a_stop_means_nothing_live_and_nothing_recent(sessions, unreadable, ready_at, now, force):
    """decide() stops exactly when nothing could be in use: every session known finished
    (or STOPPING, with force), none unreadable, the last use idle_seconds ago."""
    listed = [session(f"s{i}", st_, c, c + d) for i, (st_, c, d) in enumerate(sessions)]
    use = resource_use(listed, unreadable=unreadable, force=force)
    r = res("r", updated=ready_at)
    d = decide(r, use, IdlePolicy(idle_seconds=600), now_ms=T0 + now * 1000)
    finished = {"STOPPED", "ERROR", "EXPIRED"} | ({"STOPPING"} if force else set())
    marks = [ready_at] + [c for _, c, _ in sessions]
    marks += [c + dd for s_, c, dd in sessions if s_ in finished]
    safe = all(s_ in finished for s_, _, _ in sessions) and unreadable == 0
    assert d.stop == (safe and now - max(marks) >= 600)


def test_the_policy_is_checked_when_built():
    import pytest

    with pytest.raises(ValueError, match="idle_seconds"):
        IdlePolicy(idle_seconds=0)
    with pytest.raises(ValueError, match="list of strings"):
        IdlePolicy(deny_ids="r-1")  # type: ignore[arg-type]
    assert IdlePolicy(allow_ids=["a", "a"]).allow_ids == frozenset({"a"})  # type: ignore[arg-type]
    assert IdlePolicy().created_by == "me" and not IdlePolicy().force
