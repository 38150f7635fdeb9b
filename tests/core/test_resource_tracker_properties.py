"""Property tests of the model-resource tracker: over arbitrary resource histories, failing
ticks, caps and cursor round-trips, every event is emitted at most once, none is invented, the
first tick is quiet, the cursor stays bounded, and every terminal fact is announced."""

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_sessions_dagster.api.models import ModelResource
from rl_sessions_dagster.core.events import ResourceEventKind
from rl_sessions_dagster.core.resources import (
    ResourceObservation,
    ResourceTrackerConfig,
    ResourceTrackerState,
    advance_resources,
)

P, C, R, s, S, E = (
    f"MODEL_RESOURCES_STATUS_{x}"
    for x in ("PENDING", "CREATING", "READY", "STOPPING", "STOPPED", "ERROR")
)
WEIRD = "MODEL_RESOURCES_STATUS_HIBERNATING"
NEXT = {P: [C, R, E, S], C: [R, E], R: [s, E, S, WEIRD], s: [S], WEIRD: [R, s, E]}
STATUS_FACT = {R: "resource_ready", E: "resource_error", S: "resource_stopped"}
LEAD, QUEUE, TIMEOUT = 120_000, 300_000, 600_000


class World:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000
        self.resources: dict[str, dict] = {}
        self.n = 0
        # every (kind, id[, deadline]) fact that was true at some tick, for "none invented"
        self.history_ids: set[str] = set()

    def new(self, status: str) -> None:
        self.n += 1
        rid = f"r{self.n:04d}"
        self.resources[rid] = {"status": status, "created": self.now, "activity": self.now}

    def expires(self, r: dict) -> int | None:
        return r["activity"] + TIMEOUT if r["status"] == R else None

    def snapshot(self) -> list[ModelResource]:
        out = []
        for rid, r in self.resources.items():
            exp = self.expires(r)
            out.append(
                ModelResource.model_validate(
                    {
                        "id": rid,
                        "status": r["status"],
                        "created_at": datetime.fromtimestamp(r["created"] / 1000, UTC),
                        "expires_at": None
                        if exp is None
                        else datetime.fromtimestamp(exp / 1000, UTC),
                        "status_details": {"queue_position": 1} if r["status"] == P else {},
                    }
                )
            )
        return out


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["new_p", "new_r", "move", "move", "activity", "clock", "tick", "tick"]),
        st.integers(0, 1_000),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, cap=st.sampled_from([None, 1, 2]), pre=st.integers(0, 3))
def test_exactly_once_quiet_first_tick_bounded(actions, cap, pre):
    world = World()
    for i in range(pre):
        world.new([R, P, S][i % 3])
    config = ResourceTrackerConfig(
        max_events=cap, expiring_lead_ms=LEAD, queued_long_ms=QUEUE, lookback_ms=60_000
    )
    cursor: str | None = None
    emitted: list = []
    baseline_ids: set[str] = set()
    true_facts: set[str] = set()

    def tick(fail: bool = False) -> None:
        nonlocal cursor
        state = ResourceTrackerState.from_cursor(cursor)
        snap = world.snapshot()
        for r in snap:  # facts true right now
            if r.raw_status in STATUS_FACT:
                true_facts.add(f"{STATUS_FACT[r.raw_status]}:{r.id}")
            if r.raw_status == R and r.expires_at is not None:
                ms = int(r.expires_at.timestamp() * 1000)
                if ms - world.now <= LEAD:
                    true_facts.add(f"resource_expiring:{r.id}:{ms}")
            if r.raw_status == P and world.now - world.resources[r.id]["created"] > QUEUE:
                true_facts.add(f"resource_queued_long:{r.id}")
        if fail:
            return  # the read failed: Dagster keeps the old cursor
        first = cursor is None
        before = state.to_cursor()
        out = advance_resources(state, ResourceObservation(world.now, snap), config)
        assert state.to_cursor() == before, "advance changed the previous state"
        if first:
            assert out.events == []
            baseline_ids.update(r.id for r in snap)
        emitted.extend(out.events)
        cursor = out.state.to_cursor()
        assert ResourceTrackerState.from_cursor(cursor).to_cursor() == cursor

    tick()
    for action, x in actions:
        rids = sorted(world.resources)
        if action == "new_p":
            world.new(P)
        elif action == "new_r":
            world.new(R)
        elif action == "move" and rids:
            r = world.resources[rids[x % len(rids)]]
            choices = NEXT.get(r["status"])
            if choices:
                r["status"] = choices[x % len(choices)]
                if r["status"] == R:
                    r["activity"] = world.now
        elif action == "activity" and rids:
            world.resources[rids[x % len(rids)]]["activity"] = world.now
        elif action == "clock":
            world.now += x * 1_000
        elif action == "tick":
            tick(fail=x % 7 == 0)
    for _ in range(40):  # settle: capped ticks catch up
        tick()

    final = ResourceTrackerState.from_cursor(cursor)
    assert all(world.resources[rid]["status"] not in (S, E) for rid in final.tracked)
    keys = [e.key for e in emitted]
    assert len(keys) == len(set(keys)), "an event was emitted twice"
    assert set(keys) <= true_facts, "an event was invented"
    for e in emitted:
        if e.kind is ResourceEventKind.RESOURCE_READY:
            assert e.resource.raw_status == R
    # every resource created after the first tick that ended terminal was announced
    for rid, r in world.resources.items():
        if rid in baseline_ids:
            continue
        if r["status"] == S:
            assert f"resource_stopped:{rid}" in keys
        if r["status"] == E:
            assert f"resource_error:{rid}" in keys
