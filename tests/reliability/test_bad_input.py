"""Bad input, one row each: every one is a clear error or is handled gracefully, and nothing
that happens afterwards is lost. Sensors run through evaluate_tick on a real instance, against
the simulator over HTTP."""

import traceback

import dagster as dg
import pytest

from rl_sessions_dagster import (
    EventKind,
    EventRoute,
    PollingOptions,
    RLSessionsClient,
    build_session_sensor,
)
from rl_sessions_dagster.api.errors import AuthenticationError, ConfigurationError
from rl_sessions_dagster.core import TrackerState
from rl_sessions_dagster.core.events import TERMINAL_EVENTS

from .conftest import API_KEY, RecordingTicker, evaluation_job, make_defs, report_job

CKPT = "together_rl_checkpoint_sensor"
STATUS = "together_rl_session_status_sensor"
WRONG_KEY = "sk-live-WRONG-5d3e9a01"


def full_text(exc: BaseException) -> str:
    """Everything Dagster could serialise about an exception: message, repr, args, chain."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(exc.args)


def keys(data) -> list[str]:
    return [r.run_key for r in data.run_requests]


def status_ticker(url: str, instance, *, api_key: str | None = API_KEY) -> RecordingTicker:
    defs = make_defs(
        url,
        [
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            )
        ],
        api_key=api_key,
    )
    return RecordingTicker(defs, STATUS, instance)


# --- one function per row ---------------------------------------------------------------------


def wrong_key(sim, instance, **_):
    t = status_ticker(sim.base_url, instance, api_key=WRONG_KEY)
    sim.requests.reset()
    with pytest.raises(AuthenticationError) as info:
        t.tick()
    assert sim.requests.count() == 1, "a 401 must not be retried"
    assert "401" in str(info.value) and "Invalid API key" in str(info.value)
    assert WRONG_KEY not in full_text(info.value)
    assert t.cursor is None  # the failed tick changed nothing


def missing_key(sim, instance, monkeypatch, **_):
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    t = status_ticker(sim.base_url, instance, api_key=None)
    sim.requests.reset()
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        t.tick()
    assert sim.requests.count() == 0


def malformed_base_url(sim, instance, **_):
    for url in ["not a url", "https://", "ftp://api.together.ai", "http://[::1"]:
        t = status_ticker(url, instance)
        with pytest.raises(ConfigurationError, match="base URL") as info:
            t.tick()
        assert API_KEY not in full_text(info.value)


def misspelled_host(sim, instance, **_):
    """A host name that does not resolve is a configuration error, not an outage: the tick
    fails loudly (no retry, no quiet skip), names base_url and TOGETHER_BASE_URL, keeps the
    cursor. ``.invalid`` never resolves (RFC 2606)."""
    t = status_ticker("https://api.together-typo.invalid", instance)
    t.cursor = cursor = '{"v":3,"b":1,"w":1,"m":1,"p":1}'
    try:
        data = t.tick()
    except ConfigurationError as exc:
        text = full_text(exc)
    else:  # a resolver that is itself down answers EAI_AGAIN: an outage, rightly retried
        pytest.skip(f"this resolver did not say the host does not exist: {data.skip_message}")
    assert "base_url" in text and "TOGETHER_BASE_URL" in text and API_KEY not in text
    assert t.cursor == cursor


def credentials_in_base_url(sim, instance, **_):
    t = status_ticker("https://user:pw-CANARY-31337@api.together.ai", instance)
    with pytest.raises(ConfigurationError, match="credentials") as info:
        t.tick()
    assert "pw-CANARY-31337" not in full_text(info.value)


def plain_http_remote(sim, instance, **_):
    for url in ["http://api.together.ai", "http://10.0.0.7:8080", "http://localhost.evil.com"]:
        t = status_ticker(url, instance)
        with pytest.raises(ConfigurationError, match="plain http://") as info:
            t.tick()
        assert API_KEY not in full_text(info.value)


def unreadable_cursor(sim, instance, capsys, **_):
    world = sim.world
    sid = world.create_session()
    world.add_inference_checkpoint(sid)  # history: must not flood out after a reset
    world.create_session(fail_at_creation=True)
    world.advance_clock(2)
    garbage = [
        "not json{",
        '{"v": 0, "garbage": true}',
        '{"v": 1}',
        '{"v": 3, "b": "x", "w": 0, "m": 0, "p": 0}',
        '{"v": 3, "b": 0, "w": 0, "m": 0, "p": 0, "o": "?"}',
        '{"v": 3, "b": 0, "w": 0, "m": 0, "p": 0, "t": {"s": 5}}',
        "[1, 2, 3]",
        '"just a string"',
    ]
    for bad in garbage:
        t = RecordingTicker(
            make_defs(
                sim.base_url,
                [
                    build_session_sensor(
                        name="together_rl_checkpoint_sensor",
                        routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
                    )
                ],
            ),
            CKPT,
            instance,
        )
        t.cursor = bad
        capsys.readouterr()
        data = t.tick()
        # context.log goes to a console logger of its own (not through the root logger).
        warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
        assert data.run_requests == [], f"cursor {bad!r} flooded history"
        assert TrackerState.from_cursor(t.cursor).initialized
        assert any("cursor" in w and "starting over" in w for w in warnings), (bad, warnings)
        # ...and what happens next is still announced, once.
        world.advance_clock(1)
        cid = world.add_inference_checkpoint(sid)
        assert keys(t.tick()) == [f"checkpoint_registered:{sid}:{cid}"]
        assert t.tick().run_requests == []


def unknown_status(sim, instance, **_):
    world = sim.world
    a, b = world.create_session(), world.create_session()
    everything = build_session_sensor(
        name="all", routes=[EventRoute(list(EventKind), job=report_job, partitions_def=None)]
    )
    defs = make_defs(
        sim.base_url,
        [
            everything,
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            ),
        ],
    )
    t_all, t_status = (
        RecordingTicker(defs, "all", instance),
        RecordingTicker(defs, STATUS, instance),
    )
    t_all.tick(), t_status.tick()
    world.advance_clock(1)
    world.set_status(a, "TRAINING_SESSION_STATUS_HIBERNATING")
    world.set_status(b, "SOMETHING_ELSE_ENTIRELY")
    world.advance_steps(a, 3)
    got = t_all.tick()
    assert {r.tags["together/event"] for r in got.run_requests} == {"session_status_changed"}
    assert {r.tags["together/session_status"] for r in got.run_requests} == {
        "TRAINING_SESSION_STATUS_HIBERNATING",
        "SOMETHING_ELSE_ENTIRELY",
    }
    assert t_status.tick().run_requests == []  # not a wanted kind: tracked, the tick goes on
    world.advance_clock(1)
    world.stop_session(a, immediate=True)
    world.set_status(b, "RUNNING")
    assert keys(t_status.tick()) == [f"session_stopped:{a}"]
    after = keys(t_all.tick())
    assert f"session_stopped:{a}" in after and any(
        k.startswith(f"session_status_changed:{b}:") for k in after
    )


def unknown_fields(sim, instance, **_):
    """Every object on the wire grows fields (and an unknown nested object) the client has
    never heard of: pages still parse and the events still come."""

    def grow(node):
        if isinstance(node, dict):
            out = {k: grow(v) for k, v in node.items()}
            out["x_future_field"] = {"nested": [1, "two", None], "flag": True}
            out["zz_new_counter"] = "12345678901234567890"
            return out
        if isinstance(node, list):
            return [grow(v) for v in node]
        return node

    world = sim.world
    sid = world.create_session(display_name="drift")
    defs = make_defs(
        sim.base_url,
        [
            build_session_sensor(
                name="together_rl_checkpoint_sensor",
                routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
            ),
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            ),
        ],
    )
    t_ckpt, t_status = (
        RecordingTicker(defs, CKPT, instance),
        RecordingTicker(defs, STATUS, instance),
    )
    world.response_hook = lambda path, payload: grow(payload)
    t_ckpt.tick(), t_status.tick()
    world.advance_clock(1)
    world.advance_steps(sid, 4)
    cid = world.add_inference_checkpoint(sid)
    data = t_ckpt.tick()
    assert keys(data) == [f"checkpoint_registered:{sid}:{cid}"]
    assert data.run_requests[0].tags["together/step"] == "4"
    world.advance_clock(1)
    world.stop_session(sid, immediate=True)
    born = world.create_session(fail_at_creation=True)
    assert set(keys(t_status.tick())) == {f"session_stopped:{sid}", f"session_error:{born}"}
    # Direct client reads of the same drifted payloads.
    with RLSessionsClient(api_key=API_KEY, base_url=sim.base_url) as client:
        page = client.list_sessions_page(limit=1)
        assert len(page.data) == 1 and page.data[0].id
        assert client.get_session(sid).inference_checkpoints[0].id == cid


def limit_errors(sim, instance, **_):
    sim.requests.reset()
    with RLSessionsClient(api_key=API_KEY, base_url=sim.base_url) as client:
        for bad in (0, -1, 101, 10_000, True, 2.5, "10", None):
            with pytest.raises(ValueError, match="between 1 and 100"):
                client.list_sessions_page(limit=bad)
            with pytest.raises(ValueError, match="between 1 and 100"):
                client.list_sessions(page_size=bad)
        assert len(client.list_sessions_page(limit=1).data) <= 1
        assert len(client.list_sessions_page(limit=100).data) <= 100
    assert sim.requests.count() == 2, "a bad limit must fail before any request"
    # Bad polling knobs are refused when the sensor is defined, whatever the builder.
    for bad in (0, -5, 101):
        with pytest.raises(dg.DagsterInvalidDefinitionError, match="page_size"):
            build_session_sensor(
                name="together_rl_session_status_sensor",
                routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
                options=PollingOptions(page_size=bad),
            )
        with pytest.raises(dg.DagsterInvalidDefinitionError, match="page_size"):
            build_session_sensor(
                name="together_rl_checkpoint_sensor",
                routes=[EventRoute([EventKind.CHECKPOINT_REGISTERED], job=evaluation_job)],
                options=PollingOptions(page_size=bad),
            )
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="max_runs_per_tick"):
        build_session_sensor(
            name="together_rl_session_status_sensor",
            routes=[EventRoute(TERMINAL_EVENTS, job=report_job)],
            options=PollingOptions(max_runs_per_tick=0),
        )
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="event_kinds"):
        build_session_sensor(
            name="none", routes=[EventRoute([], job=report_job, partitions_def=None)]
        )
    with pytest.raises(ValueError):
        build_session_sensor(
            name="typo",
            routes=[EventRoute(["checkpoint_registred"], job=report_job, partitions_def=None)],
        )


def error_body_garbage(sim, instance, **_):
    """A 502 whose error message is a whole HTML page, then 200s with truncated JSON: each tick
    skips (cursor kept), then the next one delivers what happened meanwhile."""
    world = sim.world
    sid = world.create_session()
    t = status_ticker(sim.base_url, instance)
    t.tick()
    cursor = t.cursor
    world.stop_session(sid, immediate=True)
    html = "<html><body>" + "Bad gateway " * 500 + "</body></html>"
    sim.faults.add("GET /v1/rl/*", status=502, message=html, times=2)
    data = t.tick()
    assert data.run_requests == [] and "unavailable" in data.skip_message
    assert _tracker_part(t.cursor) == _tracker_part(cursor)
    sim.faults.add("GET /v1/rl/*", malformed=True, times=2)
    data = t.tick()
    assert data.run_requests == [] and _tracker_part(t.cursor) == _tracker_part(cursor)
    assert keys(t.tick()) == [f"session_stopped:{sid}"]


def _tracker_part(cursor):
    """The tracker's state in a cursor, less the time since which reads have failed (which a
    skipped tick records, to raise the alarm when an outage persists)."""
    state = TrackerState.from_cursor(cursor)
    state.failing_since_ms = None
    return state


ROWS = {
    "wrong key: loud, one request, key not echoed": wrong_key,
    "missing key: names TOGETHER_API_KEY": missing_key,
    "malformed base URL: ConfigurationError at tick": malformed_base_url,
    "misspelled host: loud, names base_url, cursor kept": misspelled_host,
    "credentials in base URL: refused, not echoed": credentials_in_base_url,
    "plain http to a remote host: ConfigurationError": plain_http_remote,
    "unreadable cursor: reset, warning, no flood": unreadable_cursor,
    "unknown status values: generic change, tick goes on": unknown_status,
    "unknown fields everywhere: parsed": unknown_fields,
    "limit / page_size out of range: ValueError / definition error": limit_errors,
    "garbage error bodies and truncated JSON: skip, then catch up": error_body_garbage,
}


@pytest.mark.parametrize("row", list(ROWS))
def test_bad_input(row, sim, instance, monkeypatch, capsys):
    ROWS[row](sim=sim, instance=instance, monkeypatch=monkeypatch, capsys=capsys)
