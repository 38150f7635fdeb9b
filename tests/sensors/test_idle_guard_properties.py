"""Try to make the idle guard stop a GPU in use (issue #21), against the simulator over HTTP with
a real DagsterInstance: generated worlds of resources whose sessions are live, paused (a status
this library does not know), STOPPING, unreadable, just ended or long ended, some over several
pages; transient faults on every read; a session that fails at creation between the sensor's
decision and the run; a stop answer lost after the API acted.

The oracle is the simulator's own record of every stop it was asked for, with what was on the
resource at that instant (``world.stop_requests()``):

* never a stop of a resource that was not READY, had a session not known to be finished
  (STOPPING ones only with ``force``), had a session the client could not read, or was used
  (a session started or ended, or it became READY) less than ``idle_seconds`` before;
* every resource that is genuinely idle at the end is stopped, and exactly once;
* resources with a live, paused or unreadable session are still READY at the end.
"""

import os
from dataclasses import dataclass

import dagster as dg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rl_sessions_dagster import IdlePolicy
from rl_sessions_dagster.sensors.idle_guard import build_idle_guard
from rl_sessions_dagster.testing import RLSimulator, SimulatedWorld
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker

from .conftest import API_KEY, make_resource

pytestmark = pytest.mark.slow

IDLE = 600
US = 1_000_000
TERMINAL = {
    "TRAINING_SESSION_STATUS_STOPPED",
    "TRAINING_SESSION_STATUS_ERROR",
    "TRAINING_SESSION_STATUS_EXPIRED",
}
PAUSED = "TRAINING_SESSION_STATUS_PAUSED"
KINDS = ["running", "creating", "stopping", "paused", "ended", "failed", "unreadable"]
#: kinds that keep a resource up for good (in this test nothing ends them).
HOLDS = {"running", "creating", "paused", "unreadable"}


@dataclass(frozen=True)
class SessionSpec:
    kind: str
    #: seconds before the end of the build phase that it ended (ended / failed kinds)
    ago: int


resource_specs = st.lists(
    st.tuples(
        st.booleans(),  # mine
        st.lists(
            st.builds(SessionSpec, st.sampled_from(KINDS), st.integers(0, 2 * IDLE)), max_size=3
        ),
        st.booleans(),  # many ended sessions (several pages of its session list)
    ),
    min_size=1,
    max_size=5,
)


def build_world(sim: RLSimulator, specs) -> tuple[dict[str, set[str]], set[str]]:
    """Resources READY 3 x IDLE ago, their sessions placed in time; returns each resource's
    session kinds and the ids of sessions made unreadable."""
    w = sim.world
    kinds: dict[str, set[str]] = {}
    timeline = []  # (seconds from start, action)
    rids = []
    for mine, sessions, many in specs:
        rid = w.create_model_resource(
            "Qwen/Qwen3-8B", inactive_timeout=86400, created_by=None if mine else "someone_else"
        )
        rids.append(rid)
        kinds[rid] = {s.kind for s in sessions}
        if many:
            timeline.append((10, ("many", rid)))
        for s in sessions:
            timeline.append((3 * IDLE - s.ago - 30, ("start", rid, s)))
    w.advance_clock(1)
    now = 1
    unreadable: set[str] = set()
    stopping_later: list[tuple[int, str]] = []
    for at, action in sorted(timeline, key=lambda a: (a[0], str(a[1]))):
        if at > now:
            w.advance_clock(at - now)
            now = at
        if action[0] == "many":
            for _ in range(130):
                w.stop_session(w.create_session(action[1]), immediate=True)
            continue
        _, rid, spec = action
        if spec.kind == "failed":
            w.create_session(rid, fail_at_creation=True)
            continue
        sid = w.create_session(rid, status="CREATING" if spec.kind == "creating" else "RUNNING")
        if spec.kind == "paused":
            w.set_status(sid, PAUSED)
        elif spec.kind == "unreadable":
            w.mutate_session_json(sid, drop=("id",))
        elif spec.kind == "stopping":
            w.stop_session(sid)  # STOPPING until session_stop_delay passes
        if spec.kind == "ended":
            stopping_later.append((3 * IDLE - spec.ago, sid))
        if spec.kind == "unreadable":
            unreadable.add(sid)
    for at, sid in sorted(stopping_later):
        if at > now:
            w.advance_clock(at - now)
            now = at
        w.stop_session(sid, immediate=True)
    if now < 3 * IDLE:
        w.advance_clock(3 * IDLE - now)
    return kinds, unreadable


def check_stops(world: SimulatedWorld, unreadable: set[str], force: bool) -> None:
    for req in world.stop_requests():
        where = f"stop of {req.resource_id} at {req.at_us}"
        assert req.status == "MODEL_RESOURCES_STATUS_READY", f"{where}: {req.status}"
        marks = [req.ready_at_us or 0]
        for sid, status, created, updated in req.sessions:
            assert sid not in unreadable, f"{where}: session {sid} was unreadable"
            allowed = TERMINAL | ({"TRAINING_SESSION_STATUS_STOPPING"} if force else set())
            assert status in allowed, f"{where}: session {sid} was {status}"
            marks += [created, updated]
        assert req.at_us - max(marks) >= IDLE * US, f"{where}: used {req.at_us - max(marks)} µs ago"


def run_guard(sim, instance, guard, ticker, executed: set[str], race) -> None:
    """One tick, then each new run executed for real (a run key runs once, as in Dagster);
    ``race`` acts between the sensor's decision and the runs."""
    job, _ = guard
    data = ticker.tick()
    requests = [r for r in data.run_requests or [] if r.run_key not in executed]
    if requests and race is not None:
        race(requests)
    for req in requests:
        executed.add(req.run_key)
        job.execute_in_process(
            run_config=req.run_config,
            tags=req.tags,
            instance=instance,
            resources={"together": make_resource(sim, max_attempts=5)},
            raise_on_error=False,
        )


EXAMPLES = int(os.environ.get("RL_GUARD_EXAMPLES", "12"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    # Each example is a world served over HTTP (seconds): report a failure as found, unshrunk.
    phases=[Phase.explicit, Phase.generate],
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    specs=resource_specs,
    faults=st.sampled_from([0.0, 0.15]),
    race=st.booleans(),
    force=st.booleans(),
    lost_answer=st.booleans(),
)
def test_the_guard_never_stops_a_gpu_in_use(specs, faults, race, force, lost_answer):
    check_guard(specs, faults=faults, race=race, force=force, lost_answer=lost_answer)


def check_guard(specs, *, faults: float, race: bool, force: bool, lost_answer: bool) -> None:
    world = SimulatedWorld(seed=3, clock="manual", session_stop_delay=4 * IDLE)
    with RLSimulator(api_key=API_KEY, world=world, seed=3) as sim, dg.instance_for_test() as inst:
        kinds, unreadable = build_world(sim, specs)
        policy = IdlePolicy(idle_seconds=IDLE, force=force, created_by=None)
        guard = build_idle_guard(policy=policy, dry_run=False)
        defs = dg.Definitions(
            jobs=[guard[0]],
            sensors=[guard[1]],
            resources={"together": make_resource(sim, max_attempts=5)},
        )
        ticker = SensorTicker(defs, guard[1].name, inst)
        if faults:
            sim.faults.add("GET /v1/rl/*", status=503, rate=faults)
        if lost_answer:
            # The stop is applied, its answer lost: the retry must not stop anything else.
            sim.faults.add("POST /v1/rl/model-resources/*/stop", malformed=True, times=1)

        raced: list[str] = []

        def race_fn(requests):
            rid = requests[0].tags["together/model_resources_id"]
            world.create_session(rid, fail_at_creation=True)  # used a moment ago
            raced.append(rid)

        executed: set[str] = set()
        run_guard(sim, inst, guard, ticker, executed, race_fn if race else None)
        check_stops(world, unreadable, force)
        for _ in range(2):
            world.advance_clock(IDLE / 3)
            run_guard(sim, inst, guard, ticker, executed, None)
        check_stops(world, unreadable, force)

        # Calm, and long past every use: each genuinely idle resource gets stopped.
        sim.faults.clear()
        world.advance_clock(2 * IDLE)
        for _ in range(3):
            run_guard(sim, inst, guard, ticker, executed, None)
        check_stops(world, unreadable, force)

        accepted: dict[str, int] = {}
        for req in world.stop_requests():
            accepted[req.resource_id] = accepted.get(req.resource_id, 0) + req.accepted
        status = {rid: world.model_resource(rid)["status"] for rid in kinds}
        for rid, ks in kinds.items():
            # STOPPING sessions stay STOPPING for 4 x IDLE here: only force may interrupt them.
            held = bool(ks & HOLDS) or ("stopping" in ks and not force)
            if held:
                assert status[rid] == "MODEL_RESOURCES_STATUS_READY", (rid, ks)
                assert accepted.get(rid, 0) == 0, (rid, ks)
            else:
                assert status[rid] in (
                    "MODEL_RESOURCES_STATUS_STOPPING",
                    "MODEL_RESOURCES_STATUS_STOPPED",
                ), (rid, ks, raced)
                assert accepted.get(rid) == 1, (rid, ks)


@pytest.mark.parametrize("force", [False, True])
def test_every_hazard_alone_in_one_world(force):
    """Each kind of session on a resource of its own, with faults, the race and a lost stop
    answer: the hazards the generated worlds combine, each made certain to appear."""
    specs = [(True, [SessionSpec(kind, IDLE // 2)], False) for kind in KINDS]
    specs += [(True, [], False), (False, [SessionSpec("ended", 0)], True)]
    check_guard(specs, faults=0.15, race=True, force=force, lost_answer=True)
