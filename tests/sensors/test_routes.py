"""Routed sensors: one poll for several targets, typed options, and targets checked at load."""

import warnings

import dagster as dg
import pytest

from rl_sessions_dagster import (
    CHECKPOINT_ASSET_SPEC,
    CHECKPOINT_PARTITIONS,
    EventKind,
    EventRoute,
    PollingOptions,
    ResourceEventKind,
    ResourceRoute,
    TogetherRLResource,
    build_session_sensor,
    checkpoint_id_for_partition,
)
from rl_sessions_dagster.api.models import InferenceCheckpoint, TrainingSession
from rl_sessions_dagster.core.events import TERMINAL_EVENTS
from rl_sessions_dagster.partitions import checkpoint_partition_key

from .conftest import evaluation, evaluation_job, make_defs, make_resource, report_job

TERMINAL = [EventKind.SESSION_STOPPED, EventKind.SESSION_ERROR, EventKind.SESSION_EXPIRED]


def routed(**kwargs) -> dg.SensorDefinition:
    return build_session_sensor(
        name="rl_events",
        routes=[
            EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job),
            EventRoute(TERMINAL, job=report_job),
        ],
        **kwargs,
    )


def scripted_world(sim):
    """Two sessions; returns a function that makes one checkpoint and one stop happen."""
    a = sim.world.create_session(display_name="sweep-a")
    b = sim.world.create_session(display_name="sweep-b")
    sim.world.advance_clock(2)

    def happen():
        sim.world.advance_clock(5)
        sim.world.advance_steps(a, 10)
        cid = sim.world.add_inference_checkpoint(a)
        sim.world.stop_session(b, immediate=True)
        return a, b, cid

    return happen


def test_one_routed_sensor_serves_both_families_with_one_poll(sim, ticker):
    happen = scripted_world(sim)
    t = ticker(make_defs(sim, routed()), "rl_events")
    t.tick()
    a, b, cid = happen()
    sim.requests.reset()
    data = t.tick()
    # One poll: active list, newest finished page, GET of the session that left.
    assert sim.requests.count() <= 3
    by_job = {r.job_name: r for r in data.run_requests}
    assert set(by_job) == {"evaluation_job", "report_job"}
    ckpt, stop = by_job["evaluation_job"], by_job["report_job"]
    assert ckpt.run_key == f"checkpoint_registered:{a}:{cid}"
    assert ckpt.partition_key == f"sweep-a/000010/{cid[:8]}"
    assert stop.run_key == f"session_stopped:{b}" and stop.partition_key is None
    (add,) = data.dynamic_partitions_requests
    assert list(add.partition_keys) == [ckpt.partition_key]
    assert [m.partition for m in data.asset_events] == [ckpt.partition_key]
    assert t.tick().run_requests == []


def test_two_single_route_sensors_poll_twice_for_the_same_events(sim, instance, ticker):
    """The reason for routing: the same world, the same tick, read once instead of twice."""
    happen = scripted_world(sim)
    defs = make_defs(
        sim,
        routed(),
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
        ),
        build_session_sensor(
            name="together_rl_session_status_sensor",
            routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
        ),
    )
    one, ckpt, status = (
        ticker(defs, n)
        for n in ("rl_events", "together_rl_checkpoint_sensor", "together_rl_session_status_sensor")
    )
    for t in (one, ckpt, status):
        t.tick()
    happen()
    counts = {}
    for label, t in (("routed", one), ("checkpoint", ckpt), ("status", status)):
        sim.requests.reset()
        assert len(t.tick().run_requests) == (2 if label == "routed" else 1)
        counts[label] = sim.requests.count()
    assert counts["routed"] <= max(counts["checkpoint"], counts["status"])
    assert counts["checkpoint"] + counts["status"] > counts["routed"]


def test_ticker_names_the_job_of_a_single_job_sensor(sim, ticker):
    happen = scripted_world(sim)
    t = ticker(make_defs(sim), "together_rl_checkpoint_sensor")
    t.tick()
    happen()
    (request,) = t.tick().run_requests
    assert request.job_name == "evaluation_job"


def test_asset_routes_run_as_named_asset_jobs(sim, ticker):
    sensor = build_session_sensor(
        name="rl_assets",
        routes=[
            EventRoute(
                [EventKind.CHECKPOINT_REGISTERED], assets=[evaluation], job_name="evaluate_ckpt"
            ),
            EventRoute(TERMINAL, job=report_job),
        ],
    )
    defs = make_defs(sim, sensor)
    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_job_def("evaluate_ckpt").partitions_def == CHECKPOINT_PARTITIONS
    happen = scripted_world(sim)
    t = ticker(defs, "rl_assets")
    t.tick()
    happen()
    assert {r.job_name for r in t.tick().run_requests} == {"evaluate_ckpt", "report_job"}


@dg.asset
def unpartitioned() -> None: ...


OTHER = dg.DynamicPartitionsDefinition(name="something_else")


@dg.asset(partitions_def=OTHER)
def other_partitions() -> None: ...


def test_checkpoint_sensor_on_an_unpartitioned_job_fails_when_built():
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="CHECKPOINT_PARTITIONS") as info:
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=report_job)],
        )
    assert "report_job" in str(info.value) and "not partitioned" in str(info.value)
    other_job = dg.define_asset_job("other_job", selection=[other_partitions]).resolve(
        asset_graph=dg.Definitions(assets=[other_partitions]).resolve_asset_graph()
    )
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="partitioned by something_else"):
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=other_job)],
        )


@pytest.mark.parametrize("asset", [unpartitioned, other_partitions])
def test_checkpoint_route_to_wrongly_partitioned_assets_fails_at_load(sim, asset):
    sensor = build_session_sensor(
        name="misrouted",
        routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], assets=[asset], job_name="ev")],
    )
    defs = dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, asset],
        sensors=[sensor],
        resources={"together": make_resource(sim)},
    )
    with pytest.raises(dg.DagsterInvalidDefinitionError) as info:
        dg.Definitions.validate_loadable(defs)
    chain = f"{info.value} {info.value.__cause__}"
    assert "CHECKPOINT_PARTITIONS" in chain and "'misrouted'" in chain


def test_user_asset_job_is_checked_on_the_first_tick(sim, ticker):
    """A define_asset_job without partitions_def is resolved from assets the sensor cannot
    see at build time; the first tick fails with the same message, before any API call."""
    job = dg.define_asset_job("plain_job", selection=[unpartitioned])
    sensor = build_session_sensor(
        name="late", routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=job)]
    )
    defs = dg.Definitions(
        assets=[CHECKPOINT_ASSET_SPEC, unpartitioned],
        jobs=[job],
        sensors=[sensor],
        resources={"together": make_resource(sim)},
    )
    sim.requests.reset()
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="CHECKPOINT_PARTITIONS"):
        ticker(defs, "late").tick()
    assert sim.requests.count() == 0


def test_a_route_holds_its_kinds_parsed():
    route = EventRoute(["session_stopped", EventKind.SESSION_ERROR], job=report_job)
    assert route.kinds == {EventKind.SESSION_STOPPED, EventKind.SESSION_ERROR}
    assert route.event_kinds == route.kinds and " kinds=" not in repr(route)  # shown once
    assert route == EventRoute([EventKind.SESSION_ERROR, "session_stopped"], job=report_job)
    gpu = ResourceRoute(["resource_ready"], job=report_job)
    assert gpu.kinds == gpu.event_kinds == {ResourceEventKind.RESOURCE_READY}


def test_route_and_option_mistakes_fail_when_built():
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="more than one route"):
        build_session_sensor(
            name="x",
            routes=[
                EventRoute([EventKind.SESSION_STOPPED], job=report_job),
                EventRoute(TERMINAL, job=report_job),
            ],
        )
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="no checkpoint"):
        EventRoute([EventKind.CHECKPOINT_REGISTERED, EventKind.SESSION_STOPPED], job=report_job)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="exactly one"):
        EventRoute([EventKind.SESSION_STOPPED])
    with pytest.raises(ValueError, match="valid kinds") as unknown:  # a ValueError, as in 0.1
        EventRoute(["session_stoped"], job=report_job)
    assert isinstance(unknown.value, dg.DagsterInvalidDefinitionError)  # and a definition error
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="at least one event kind"):
        EventRoute([], job=report_job)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="at least one EventRoute"):
        build_session_sensor(name="x", routes=[])
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="page_size"):
        PollingOptions(page_size=0)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="tick_budget_seconds"):
        PollingOptions(tick_budget_seconds=0)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="unordered_pages_per_tick"):
        PollingOptions(unordered_pages_per_tick=0)
    config = PollingOptions(unordered_pages_per_tick=40).tracker_config(frozenset(TERMINAL))
    assert config.unordered_pages_per_tick == 40
    options = PollingOptions()
    with pytest.raises(AttributeError):
        options.page_size = 5  # type: ignore[misc]


def test_the_01_loose_polling_keywords_are_gone(sim, ticker):
    """0.2.0 carries no deprecated spelling: the knobs go in PollingOptions only."""
    with pytest.raises(TypeError, match="page_size"):
        build_session_sensor(
            name="old",
            routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            page_size=1,  # type: ignore[call-arg]
        )
    sensor = build_session_sensor(
        name="new",
        routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
        options=PollingOptions(page_size=1),
    )
    sid = sim.world.create_session()
    t = ticker(make_defs(sim, sensor), "new")
    t.tick()
    sim.world.stop_session(sid, immediate=True)
    sim.requests.reset()
    assert [r.run_key for r in t.tick().run_requests] == [f"session_stopped:{sid}"]
    last = sim.requests.last("GET", "/v1/rl/training-sessions")
    assert last is not None and last.param("limit") == "1"


def needs_together() -> None: ...


@dg.job
def resourceful_job() -> None:
    needs_together()


def test_definitions_load_raises_no_warning_of_ours():
    """Nothing this library does at load warns. (Dagster 1.13 copies a sensor to bind resources
    to its op jobs and that copy warns about ``owners``: Dagster's own warning, for every
    sensor whose job needs a resource, raised from Dagster's code and left as it is.)"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sensor = build_session_sensor(
            name="quiet",
            routes=[
                EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job),
                EventRoute(TERMINAL, job=resourceful_job),
            ],
        )
        defs = dg.Definitions(
            assets=[CHECKPOINT_ASSET_SPEC, evaluation],
            jobs=[evaluation_job, resourceful_job],
            sensors=[
                sensor,
                build_session_sensor(
                    name="s2", routes=[EventRoute(TERMINAL_EVENTS, job=resourceful_job)]
                ),
            ],
            resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
        )
        dg.Definitions.validate_loadable(defs)
        assert defs.resolve_sensor_def("quiet").description
    ours = [f"{w.filename}: {w.message}" for w in caught if "rl_sessions_dagster" in w.filename]
    assert ours == []
    assert [str(w.message) for w in caught if "owners" not in str(w.message)] == []


@pytest.mark.parametrize(
    ("name", "step", "key"),
    [
        ("sweep-lr-1e-5", 20, "sweep-lr-1e-5/000020/c0ffee00"),
        (None, 7, "session-abcdef12/000007/c0ffee00"),
        ("a/b ... c,d", None, "a-b-.-c-d/nostep/c0ffee00"),
        ("", 1_234_567, "session-abcdef12/1234567/c0ffee00"),
    ],
)
def test_partition_keys_are_short_readable_and_safe(name, step, key):
    session = TrainingSession(id="abcdef12-0000-0000-0000-000000000000", display_name=name)
    ckpt = InferenceCheckpoint(id="c0ffee00-1111-2222-3333-444455556666", step=step)
    assert checkpoint_partition_key(session, ckpt) == key
    assert checkpoint_partition_key(session, ckpt) == key  # stable


def test_keys_sort_by_session_then_step():
    s = TrainingSession(id="s1", display_name="run")
    keys = [
        checkpoint_partition_key(s, InferenceCheckpoint(id=f"c{n}", step=n)) for n in (100, 20, 3)
    ]
    assert sorted(keys) == [keys[2], keys[1], keys[0]]


def test_checkpoint_id_is_found_for_sensor_runs_and_ui_reruns(instance):
    """Sensor runs carry the id as a tag; a UI re-run has no tag and reads the event the sensor
    recorded; a key that is a bare id is the id."""
    full = "c0ffee00-1111-2222-3333-444455556666"
    key = "sweep-a/000010/c0ffee00"
    seen: list[str] = []

    @dg.asset(partitions_def=CHECKPOINT_PARTITIONS)
    def evaluate(context: dg.AssetExecutionContext) -> None:
        seen.append(checkpoint_id_for_partition(context))

    instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key, full, "other/000001/abc"])
    tags = {"together/checkpoint_id": full}
    assert dg.materialize([evaluate], partition_key=key, instance=instance, tags=tags).success
    with pytest.raises(Exception, match="no checkpoint id recorded"):
        dg.materialize([evaluate], partition_key=key, instance=instance)
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            CHECKPOINT_ASSET_SPEC.key, partition=key, metadata={"checkpoint_id": full}
        )
    )
    assert dg.materialize([evaluate], partition_key=key, instance=instance).success
    assert dg.materialize([evaluate], partition_key=full, instance=instance).success
    assert seen == [full, full, full]
