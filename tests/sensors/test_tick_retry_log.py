"""API retries inside a sensor tick reach that tick's log (issue #18 item 4).

Each sensor of the library is ticked by ``SensorTicker``, which stores ``context.log`` under a
log key in the instance's compute log manager exactly as the daemon does; the lines are read
back the way the UI reads them. The simulator answers the first requests with 503 (or 429 with
Retry-After); the assertions are on the structure of the lines, never on how long a wait was.
"""

import re
import socket

import dagster as dg

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    IdlePolicy,
    ResourceEventKind,
    ResourceRoute,
    TogetherRLResource,
    build_model_resource_sensor,
    build_session_sensor,
)
from rl_sessions_dagster.sensors.idle_guard import build_idle_guard

from ..support import evaluation_job
from .conftest import API_KEY, make_defs, make_resource

FAST = {"backoff_jitter": 0.01}  # the conftest's backoff is short; keep its jitter short too

SESSIONS = "GET /v1/rl/training-sessions"
RESOURCES = "GET /v1/rl/model-resources"
RETRY = re.compile(
    r"^Together API retry: (?P<endpoint>GET /v1/rl/[\w/-]+) failed with HTTP (?P<status>\d+) "
    r"\((?P<error>\w+)\) on attempt (?P<attempt>\d+)/(?P<max>\d+); retrying in "
    r"(?P<wait>\d+\.\d\d) s \((?P<source>backoff|Retry-After honoured)\)"
)


def retry_lines(ticker) -> list[re.Match]:
    """The retry lines of the last tick; each one must be a WARNING."""
    found = []
    for level, message in ticker.log_messages():
        match = RETRY.match(message)
        if match:
            assert level == "WARNING", (level, message)
            found.append(match)
    return found


def assert_no_key(ticker) -> None:
    for i in range(len(ticker.log_keys)):
        for record in ticker.log_records(i):
            assert API_KEY not in repr(record)
            assert "Bearer" not in repr(record)


def test_session_sensor_tick_logs_each_retry_and_counts_them(sim, ticker) -> None:
    sim.world.create_session(display_name="watched")
    defs = make_defs(
        sim,
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
        ),
        max_attempts=4,
        **FAST,
    )
    t = ticker(defs, "together_rl_checkpoint_sensor")
    sim.faults.add(SESSIONS, status=503, times=2)

    data = t.tick()

    lines = retry_lines(t)
    assert [(m["endpoint"], m["status"], m["error"]) for m in lines] == [
        (SESSIONS, "503", "ServerError")
    ] * 2
    assert [(m["attempt"], m["max"], m["source"]) for m in lines] == [
        ("1", "4", "backoff"),
        ("2", "4", "backoff"),
    ]
    # The one summary line of the tick counts them (and no second summary is added).
    (summary,) = [m for _, m in t.log_messages() if "API request(s)" in m]
    assert "(2 retried)" in summary and summary in (data.skip_message or summary)
    assert_no_key(t)

    t.tick()  # a clean tick: no retry line, and the count says 0
    assert retry_lines(t) == []
    assert any("(0 retried)" in m for _, m in t.log_messages())


def test_retry_after_is_named_when_honoured(sim, ticker) -> None:
    defs = make_defs(
        sim,
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
        ),
        max_attempts=3,
        **FAST,
    )
    t = ticker(defs, "together_rl_checkpoint_sensor")
    sim.faults.add(SESSIONS, status=429, retry_after=0.05, times=1)
    t.tick()
    (line,) = retry_lines(t)
    assert (line["status"], line["error"], line["source"]) == (
        "429",
        "RateLimitError",
        "Retry-After honoured",
    )


def test_a_tick_that_gives_up_still_shows_its_retries(sim, ticker) -> None:
    """Every attempt fails: the tick skips quietly, its log says what was tried and why."""
    defs = make_defs(
        sim,
        build_session_sensor(
            name="together_rl_checkpoint_sensor",
            routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
        ),
        max_attempts=3,
        **FAST,
    )
    t = ticker(defs, "together_rl_checkpoint_sensor")
    sim.faults.add(SESSIONS, status=503)
    data = t.tick()
    assert "will retry next tick" in (data.skip_message or "")
    assert [m["attempt"] for m in retry_lines(t)] == ["1", "2"]
    assert ("INFO", f"2 API request(s) retried this tick: {SESSIONS} (2)") in t.log_messages()
    assert_no_key(t)


@dg.op
def _noop() -> None:
    pass


@dg.job
def _resource_job() -> None:
    _noop()


def test_model_resource_sensor_and_idle_guard_log_retries_with_no_edit_of_their_own(
    sim, ticker
) -> None:
    """The routing lives in the resource and the sensor definition: every sensor family logs
    its retries, and its summary line counts them."""
    sensor = build_model_resource_sensor(
        routes=[ResourceRoute(list(ResourceEventKind), job=_resource_job)]
    )
    guard_job, guard = build_idle_guard(policy=IdlePolicy(idle_seconds=600))
    defs = dg.Definitions(
        jobs=[_resource_job, guard_job],
        sensors=[sensor, guard],
        resources={"together": make_resource(sim, max_attempts=4, **FAST)},
    )
    for name in (sensor.name, guard.name):
        t = ticker(defs, name)
        sim.faults.add(RESOURCES, status=503, times=1)
        t.tick()
        (line,) = retry_lines(t)
        assert (line["endpoint"], line["attempt"]) == (RESOURCES, "1")
        # The shared tick skeleton's one summary line counts it (no second line).
        (summary,) = [m for _, m in t.log_messages() if "API request(s)" in m]
        assert "(1 retried)" in summary
        assert_no_key(t)


def test_a_sensor_of_your_own_passes_its_log(sim, instance) -> None:
    """``get_client(log=context.log)`` in a user's sensor: the retry lands in that log."""
    seen: list[str] = []

    @dg.sensor(job=_resource_job)
    def mine(context: dg.SensorEvaluationContext, together: TogetherRLResource) -> dg.SkipReason:
        with together.get_client(log=context.log) as client:
            list(client.list_model_resources())
        return dg.SkipReason(f"{client.stats.retries} retried")

    class ListLog:
        def warning(self, msg: str, *args, **kwargs) -> None:
            seen.append(msg)

        info = warning

    with dg.build_sensor_context(
        instance=instance, resources={"together": make_resource(sim, max_attempts=4, **FAST)}
    ) as context:
        sim.faults.add(RESOURCES, status=503, times=1)
        result = mine(context)
        assert result.skip_message == "1 retried"
        # And any object with warning/info will do as the log.
        sim.faults.add(RESOURCES, status=503, times=1)
        with context.resources.together.get_client(log=ListLog()) as client:
            list(client.list_model_resources())
    assert len(seen) == 1 and RETRY.match(seen[0])


def test_a_skipped_tick_names_the_url_it_tried_and_what_to_check(sim, ticker) -> None:
    """Connection refused: the skip says where it went (base_url, never the key) in one line."""
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    defs = make_defs(sim, base_url=f"http://127.0.0.1:{port}", max_attempts=1, **FAST)
    data = ticker(defs, "together_rl_checkpoint_sensor").tick()
    message = data.skip_message or ""
    assert f"Together RL API unavailable at http://127.0.0.1:{port}" in message
    assert "will retry next tick" in message and "ConnectError" in message
    assert "check the API status" in message and "base_url" in message
    assert "\n" not in message and API_KEY not in message
