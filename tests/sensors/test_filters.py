"""A session outside the sensor's filter costs nothing on any path (issue #31).

Sessions reach a tick through the active list, the finished-session scan, the discovery pass,
the checkpoint list (born between ticks, then fetched by id) and fetches by id of sessions
waiting for registrations. Each test builds one session inside and one outside the filter on
the same path and checks that only the inside one produces runs, partitions or
materializations, in every list order the sensors support, and that the outside one is not
fetched again on later ticks.
"""

from dataclasses import dataclass
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_sessions_dagster import EventKind, EventRoute, SessionFilter, build_session_sensor
from rl_sessions_dagster.api.models import TrainingSession
from rl_sessions_dagster.testing import RLSimulator, SimulatorError
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

from .conftest import evaluation_job, make_defs, report_job

ORDERS = ["newest_first", "oldest_first", "unordered"]
CHECKPOINTS = [EventKind.CHECKPOINT_REGISTERED]
TERMINAL = [EventKind.SESSION_STOPPED, EventKind.SESSION_ERROR, EventKind.SESSION_EXPIRED]


@dataclass(frozen=True)
class Case:
    """One filter field, and how to create a session inside or outside it."""

    name: str
    session_filter: SessionFilter
    inside: dict[str, Any]
    outside: dict[str, Any]


def cases(sim: RLSimulator) -> dict[str, Case]:
    world = sim.world
    mine, other = world.create_model_resource(), world.create_model_resource()
    return {
        "display_name": Case(
            "display_name",
            SessionFilter(display_name="sweep-*"),
            {"display_name": "sweep-1"},
            {"display_name": "probe-1"},
        ),
        "wandb_project": Case(
            "wandb_project",
            SessionFilter(wandb_project="grpo"),
            {"wandb": {"project": "grpo", "group": "g"}},
            {"wandb": {"project": "other", "group": "g"}},
        ),
        "wandb_group": Case(
            "wandb_group",
            SessionFilter(wandb_group="sweep-a"),
            {"wandb": {"project": "p", "group": "sweep-a"}},
            {"wandb": {"project": "p", "group": "sweep-b"}},
        ),
        "model_resource": Case(
            "model_resource",
            SessionFilter(model_resources_id=mine),
            {"resource_id": mine},
            {"resource_id": other},
        ),
        "creator": Case(
            "creator",
            SessionFilter(created_by=world.user_id),
            {"created_by": world.user_id},
            {"created_by": "user_teammate"},
        ),
        "creator_me": Case(
            "creator_me",
            SessionFilter(created_by="me"),
            {"created_by": world.user_id},
            {"created_by": "user_teammate"},
        ),
    }


FIELDS = ["display_name", "wandb_project", "wandb_group", "model_resource", "creator", "creator_me"]


def sensor(case: Case, kinds: list[EventKind]) -> dg.SensorDefinition:
    routes = (
        [EventRoute(CHECKPOINTS, job=evaluation_job)]
        if kinds == CHECKPOINTS
        else [
            EventRoute(CHECKPOINTS, job=evaluation_job),
            EventRoute(TERMINAL, job=report_job),
        ]
    )
    return build_session_sensor(name="filtered", routes=routes, session_filter=case.session_filter)


def session_ids(data) -> set[str]:
    """Every session a tick's result names: runs, partitions and materializations."""
    named = {r.tags["together/session_id"] for r in data.run_requests}
    named |= {
        e.metadata["session_id"].value
        for e in data.asset_events
        if isinstance(e, dg.AssetMaterialization) and "session_id" in e.metadata
    }
    return named


def partition_keys(data) -> list[str]:
    return [k for req in data.dynamic_partitions_requests for k in req.partition_keys]


def fetches_of(sim: RLSimulator, sid: str) -> int:
    return sum(1 for r in sim.requests.records("GET") if r.path.endswith(f"/{sid}"))


def quiet_ticks(sim: RLSimulator, t, outside: str, n: int = 3) -> None:
    """Later ticks: the outside session keeps producing checkpoints, is never fetched and
    never named."""
    sim.requests.reset()
    for _ in range(n):
        sim.world.advance_clock(5)
        if sim.world.session(outside)["status"] == "RUNNING":
            sim.world.advance_steps(outside, 5)
            sim.world.add_inference_checkpoint(outside)
        assert outside not in session_ids(t.tick())
    assert fetches_of(sim, outside) == 0


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("field", FIELDS)
def test_session_born_between_ticks_with_a_checkpoint(sim, ticker, field, order):
    """The reported path: a checkpoint-only sensor finds sessions born between ticks through
    the checkpoint list and fetches them by id; the fetch must apply the filter too."""
    sim.world.set_list_order(order)
    case = cases(sim)[field]
    t = ticker(make_defs(sim, sensor(case, CHECKPOINTS)), "filtered")
    t.tick()
    sim.world.advance_clock(5)
    inside = sim.world.create_session(**case.inside)
    outside = sim.world.create_session(**case.outside)
    sim.world.advance_steps(inside, 10)
    sim.world.advance_steps(outside, 10)
    c_in = sim.world.add_inference_checkpoint(inside)
    sim.world.add_inference_checkpoint(outside)
    sim.world.stop_session(inside, immediate=True)  # born and ended between two ticks
    sim.world.advance_clock(2)
    data = t.tick()
    assert [r.run_key for r in data.run_requests] == [f"checkpoint_registered:{inside}:{c_in}"]
    assert session_ids(data) == {inside}
    assert all(c_in[:8] in k for k in partition_keys(data))
    quiet_ticks(sim, t, outside)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("field", FIELDS)
def test_sessions_born_before_the_first_tick_and_ending(sim, ticker, field, order):
    """Active list, departures fetched by id, and the finished-session scan."""
    sim.world.set_list_order(order)
    case = cases(sim)[field]
    inside = sim.world.create_session(**case.inside)
    outside = sim.world.create_session(**case.outside)
    sim.world.advance_clock(2)
    t = ticker(make_defs(sim, sensor(case, [*CHECKPOINTS, *TERMINAL])), "filtered")
    t.tick()
    named: set[str] = set()
    for sid in (inside, outside):
        sim.world.advance_steps(sid, 10)
        sim.world.add_inference_checkpoint(sid)
    sim.world.advance_clock(5)
    named |= session_ids(t.tick())
    for sid in (inside, outside):
        sim.world.stop_session(sid, immediate=True)
    # Two sessions born and ended between ticks: only the finished-session scan shows them.
    late_in = sim.world.create_session(**case.inside, fail_at_creation=True)
    late_out = sim.world.create_session(**case.outside, fail_at_creation=True)
    sim.world.advance_clock(5)
    data = t.tick()
    named |= session_ids(data)
    kinds = {r.tags["together/event"] for r in data.run_requests}
    assert {"session_stopped", "session_error"} <= kinds
    assert named == {inside, late_in}
    sim.requests.reset()
    for _ in range(2):
        sim.world.advance_clock(5)
        assert not session_ids(t.tick()) & {outside, late_out}
    assert fetches_of(sim, outside) == fetches_of(sim, late_out) == 0


@pytest.mark.parametrize("field", FIELDS)
def test_late_registration_of_an_excluded_session(sim, ticker, field):
    """A checkpoint whose registration lands after its session ended: the session waits in the
    cursor only when the filter admits it."""
    case = cases(sim)[field]
    t = ticker(make_defs(sim, sensor(case, CHECKPOINTS)), "filtered")
    t.tick()
    sim.world.advance_clock(5)
    ids = {}
    for label, kw in (("in", case.inside), ("out", case.outside)):
        sid = sim.world.create_session(**kw)
        sim.world.advance_steps(sid, 10)
        ids[label] = (sid, sim.world.add_inference_checkpoint(sid, registered=False))
        sim.world.stop_session(sid, immediate=True)
    sim.world.advance_clock(5)
    assert t.tick().run_requests == []
    for _, cid in ids.values():
        sim.world.register_checkpoint(cid)
    sim.world.advance_clock(5)
    data = t.tick()
    sid_in, c_in = ids["in"]
    assert [r.run_key for r in data.run_requests] == [f"checkpoint_registered:{sid_in}:{c_in}"]
    assert session_ids(data) == {sid_in}
    quiet_ticks(sim, t, ids["out"][0], n=2)


def test_discovery_pass_applies_the_filter(sim, ticker):
    """A session in a status this library does not know is found by the unfiltered discovery
    pass; outside the filter it is never adopted."""
    case = cases(sim)["display_name"]
    inside = sim.world.create_session(**case.inside)
    outside = sim.world.create_session(**case.outside)
    sim.world.set_status(inside, "PAUSED")
    sim.world.set_status(outside, "PAUSED")
    t = ticker(make_defs(sim, sensor(case, [*CHECKPOINTS, *TERMINAL])), "filtered")
    t.tick()
    sim.world.advance_clock(5)
    sim.world.set_status(inside, "RUNNING")
    sim.world.set_status(outside, "RUNNING")
    named: set[str] = set()
    for sid in (inside, outside):
        sim.world.advance_steps(sid, 10)
        sim.world.add_inference_checkpoint(sid)
        sim.world.stop_session(sid, immediate=True)
    for _ in range(2):
        sim.world.advance_clock(5)
        named |= session_ids(t.tick())
    assert named == {inside}


def test_creator_me_is_learnt_once_per_tick(sim, ticker):
    """``created_by: me`` on a fetch by id: who "me" is comes from the filtered active list
    when it has one of our sessions, else from one list request, never one per session."""
    case = cases(sim)["creator_me"]
    t = ticker(make_defs(sim, sensor(case, CHECKPOINTS)), "filtered")
    t.tick()
    sim.world.advance_clock(5)
    outs = [sim.world.create_session(**case.outside) for _ in range(3)]
    for sid in outs:
        sim.world.advance_steps(sid, 10)
        sim.world.add_inference_checkpoint(sid)
        sim.world.stop_session(sid, immediate=True)
    sim.world.advance_clock(2)
    sim.requests.reset()
    assert t.tick().run_requests == []
    probes = [
        r
        for r in sim.requests.records("GET", "/v1/rl/training-sessions")
        if r.param("created_by") == "me" and r.param("limit") == "1"
    ]
    assert len(probes) == 1


# --- a property: whatever happens, no event names a session the filter excludes ----------

STEP = st.sampled_from(["born", "born_with_checkpoint", "checkpoint", "unregistered",
                        "register", "stop", "fail", "tick"])  # fmt: skip


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    field=st.sampled_from(FIELDS),
    order=st.sampled_from(ORDERS),
    checkpoints_only=st.booleans(),
    script=st.lists(st.tuples(STEP, st.booleans()), min_size=3, max_size=14),
)
def test_no_event_ever_names_an_excluded_session(make_sim, field, order, checkpoints_only, script):
    sim = make_sim()
    sim.world.set_list_order(order)
    case = cases(sim)[field]
    kinds = CHECKPOINTS if checkpoints_only else [*CHECKPOINTS, *TERMINAL]
    with dg.instance_for_test() as instance:
        run_script(sim, SensorTicker(make_defs(sim, sensor(case, kinds)), "filtered", instance),
                   case, script)  # fmt: skip


def run_script(sim: RLSimulator, t: SensorTicker, case: Case, script) -> None:
    excluded: set[str] = set()
    sessions: dict[bool, list[str]] = {True: [], False: []}
    pending: list[str] = []
    t.tick()
    for step, inside in script:
        sim.world.advance_clock(3)
        live = [s for s in sessions[inside] if sim.world.session(s)["status"] == "RUNNING"]
        if step.startswith("born"):
            try:
                sid = sim.world.create_session(**(case.inside if inside else case.outside))
            except SimulatorError as exc:  # the script filled the resource: this step only ticks
                assert exc.code == "resource_at_capacity", exc
                assert not session_ids(t.tick()) & excluded
                continue
            sessions[inside].append(sid)
            if not inside:
                excluded.add(sid)
            if step == "born_with_checkpoint":
                sim.world.advance_steps(sid, 3)
                sim.world.add_inference_checkpoint(sid)
        elif step in ("checkpoint", "unregistered") and live:
            sim.world.advance_steps(live[-1], 3)
            cid = sim.world.add_inference_checkpoint(live[-1], registered=step == "checkpoint")
            if step == "unregistered":
                pending.append(cid)
        elif step == "register" and pending:
            sim.world.register_checkpoint(pending.pop(0))
        elif step == "stop" and live:
            sim.world.stop_session(live[0], immediate=True)
        elif step == "fail" and live:
            sim.world.fail_session(live[0])
        else:
            assert not session_ids(t.tick()) & excluded
    sim.world.advance_clock(3)
    assert not session_ids(t.tick()) & excluded


def test_filter_checks_every_field_on_a_fetched_session():
    """Unit: a fetched session must show each filtered value itself; a listed one may leave a
    server-side field out (the API filtered it)."""
    s = TrainingSession.model_validate(
        {"id": "s1", "status": "RUNNING", "display_name": "sweep-1", "created_by": "u1",
         "model_resources_id": "r1", "metadata": {"wandb": {"project": "p", "group": "g"}}}
    )  # fmt: skip
    bare = TrainingSession.model_validate({"id": "s2", "status": "RUNNING"})
    assert SessionFilter(model_resources_id="r1", created_by="u1", wandb_group="g").matches(s)
    assert not SessionFilter(model_resources_id="r2").matches(s)
    assert not SessionFilter(created_by="u2").matches(s)
    assert not SessionFilter(wandb_group="h").matches(s)
    assert SessionFilter(created_by="me").matches(s, user_id="u1")
    assert not SessionFilter(created_by="me").matches(s, user_id="u2")
    assert not SessionFilter(created_by="me").matches(s)  # "me" unknown: not admitted
    assert not SessionFilter(model_resources_id="r1").matches(bare)
    assert SessionFilter(model_resources_id="r1", created_by="me").matches(bare, listed=True)
    assert not SessionFilter(display_name="sweep-*").matches(bare, listed=True)
