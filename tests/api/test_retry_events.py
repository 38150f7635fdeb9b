"""The retry hook's event, as the Dagster integration logs it: endpoint without host or query,
HTTP status or error class, attempt n of max, the wait and where it came from; never the key,
even when the server echoes it back in its error body."""

import re

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY, RetryRecorder

LINE = re.compile(
    r"^Together API retry: (?P<endpoint>[A-Z]+ /\S+) failed with (?P<failure>.+) on attempt "
    r"(?P<attempt>\d+)/(?P<max>\d+); retrying in \d+\.\d\d s \((?P<source>backoff|Retry-After "
    r"honoured)\)( \[request_id=\S+\])?$"
)


def test_events_describe_themselves_without_key_host_or_query(
    sim: RLSimulator, client: RLSessionsClient, retries: RetryRecorder
) -> None:
    sim.world.populate(3, 1)
    echo = f"upstream said: Authorization: Bearer {KEY} (key {KEY})"
    sim.faults.add("GET /v1/rl/training-sessions", status=503, times=1, message=echo)
    sim.faults.add("GET /v1/rl/training-sessions", status=429, retry_after=0.01, times=1)
    sim.faults.add("GET /v1/rl/training-sessions", drop=True, times=1)
    list(client.list_sessions(page_size=1))  # pages carry ?limit=&after=<cursor>

    assert len(retries.events) == 3
    matches = [LINE.match(e.describe()) for e in retries.events]
    assert all(matches), [e.describe() for e in retries.events]
    parsed = [
        (m["endpoint"], m["failure"], m["attempt"], m["max"], m["source"]) for m in matches if m
    ]
    assert parsed == [
        ("GET /v1/rl/training-sessions", "HTTP 503 (ServerError)", "1", "4", "backoff"),
        (
            "GET /v1/rl/training-sessions",
            "HTTP 429 (RateLimitError)",
            "2",
            "4",
            "Retry-After honoured",
        ),
        ("GET /v1/rl/training-sessions", "TransportError", "3", "4", "backoff"),
    ]
    for event in retries.events:
        assert (event.method, event.path) == ("GET", "/v1/rl/training-sessions")
        assert event.max_attempts == 4
        text = event.describe()
        assert KEY not in text and "Bearer" not in text and "?" not in text
        assert sim.base_url not in text
    assert [e.status_code for e in retries.events] == [503, 429, None]
    assert [e.retry_after_honoured for e in retries.events] == [False, True, False]
