"""Typed errors: status mapping, message shape, body parsing, and that the key never leaks.

Unit tests build ``httpx.Response`` objects directly (no transport involved); the end-to-end
leak checks against the simulator live at the bottom.
"""

from __future__ import annotations

import logging
import pickle
import time

import httpx
import pytest

from rl_sessions_dagster.api import RLSessionsClient, TogetherRLError
from rl_sessions_dagster.api.errors import (
    BODY_EXCERPT_CHARS,
    MIN_SECRET_CHARS,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DeadlineExceeded,
    DecodeError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TransportError,
    UnprocessableEntityError,
    error_from_response,
    scrub,
    transport_error,
)
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY, RetryRecorder, assert_clean, leak_surface

URL = "https://api.together.ai/v1/rl/training-sessions?limit=5&status=A%2CB"


def response(
    status: int, body: object = None, *, text: str | None = None, **headers: str
) -> httpx.Response:
    request = httpx.Request("GET", URL, headers={"Authorization": f"Bearer {KEY}"})
    if text is not None:
        return httpx.Response(status, text=text, headers=headers, request=request)
    return httpx.Response(status, json=body, headers=headers, request=request)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (408, APIStatusError),
        (418, APIStatusError),
        (302, APIStatusError),
    ],
)
def test_status_maps_to_class(status: int, cls: type[TogetherRLError]) -> None:
    err = error_from_response(response(status, {"error": {"message": "m"}}), secrets=[KEY])
    assert type(err) is cls and err.status_code == status
    assert err.retryable == (status in (408, 429) or status >= 500)
    assert isinstance(err, TogetherRLError)


def test_422_is_a_bad_request() -> None:
    assert issubclass(UnprocessableEntityError, BadRequestError)


def test_message_names_endpoint_status_type_code_and_request_id() -> None:
    body = {
        "error": {
            "message": "Invalid API key",
            "type": "authentication_error",
            "code": "invalid_api_key",
        }
    }
    err = error_from_response(response(401, body, **{"x-request-id": "req_x"}), secrets=[KEY])
    assert str(err) == (
        "GET /v1/rl/training-sessions → 401 authentication_error (code=invalid_api_key): "
        "Invalid API key [request_id=req_x]"
    )
    assert (err.error_type, err.error_code, err.api_message, err.request_id) == (
        "authentication_error", "invalid_api_key", "Invalid API key", "req_x",
    )  # fmt: skip
    assert err.method == "GET" and err.url == "/v1/rl/training-sessions?limit=5&status=A%2CB"


def test_grpc_style_body() -> None:
    body = {"code": 5, "message": "session not found", "details": []}
    err = error_from_response(response(404, body), secrets=[KEY])
    assert str(err) == "GET /v1/rl/training-sessions → 404 NOT_FOUND (code=5): session not found"


def test_non_json_body_is_excerpted_and_capped() -> None:
    html = "<html>" + "x" * 5000 + "</html>"
    err = error_from_response(response(502, text=html), secrets=[KEY])
    assert err.body_excerpt is not None and len(err.body_excerpt) < BODY_EXCERPT_CHARS + 30
    assert "[5013 chars]" in str(err) and len(str(err)) < 600
    empty = error_from_response(response(503, text=""), secrets=[KEY])
    assert str(empty) == "GET /v1/rl/training-sessions → 503: Service Unavailable"


def test_rate_limit_carries_retry_after() -> None:
    err = error_from_response(response(429, {}), secrets=[KEY], retry_after=1.5)
    assert isinstance(err, RateLimitError) and err.retry_after == 1.5


def test_body_echoing_the_key_is_scrubbed_everywhere() -> None:
    body = {
        "error": {
            "message": f"bad header: Authorization: Bearer {KEY}",
            "type": f"t-{KEY}",
            "code": KEY,
        }
    }
    err = error_from_response(response(401, body, **{"x-request-id": KEY}), secrets=[KEY])
    assert KEY not in leak_surface(err)
    assert "Bearer ***" in str(err)


def test_scrub_masks_any_bearer_token_even_an_unknown_one() -> None:
    assert scrub("Authorization: bearer abc.def-123, next", []) == "Authorization: bearer ***, next"
    assert scrub(f"x {KEY} y", [KEY, None, ""]) == "x *** y"


def test_errors_pickle_with_their_attributes() -> None:
    err = error_from_response(
        response(429, {"error": {"message": "slow down"}}), secrets=[KEY], retry_after=2.0
    )
    err.attempts = 3
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is RateLimitError and str(clone) == str(err)
    assert (clone.retry_after, clone.attempts, clone.status_code) == (2.0, 3, 429)


@pytest.mark.parametrize(
    ("exc", "sent"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow connect"), False),
        (httpx.PoolTimeout("pool"), False),
        (httpx.ReadTimeout("slow read"), True),
        (httpx.RemoteProtocolError("Server disconnected without sending a response."), True),
        (httpx.WriteError("broken pipe"), True),
    ],
)
def test_transport_error_knows_whether_the_request_may_have_been_sent(
    exc: httpx.RequestError, sent: bool
) -> None:
    url = httpx.URL(URL)
    err = transport_error(exc, method="POST", url=url, secrets=[KEY])
    assert err.may_have_reached_server is sent and err.retryable
    assert str(err).startswith(f"POST /v1/rl/training-sessions: {type(exc).__name__}: ")
    assert err.__cause__ is None and err.__context__ is None
    assert isinstance(err, TransportError)


# -- end to end: no error, log line or traceback ever shows the key ---------------------------------


def test_wrong_key_is_one_request_and_never_shown(sim: RLSimulator, retries: RetryRecorder) -> None:
    wrong = "sk-WRONG-canary-456"
    with (
        RLSessionsClient(wrong, base_url=sim.base_url, retry=retries.policy()) as client,
        pytest.raises(AuthenticationError) as info,
    ):
        client.list_sessions_page()
    assert len(sim.requests) == 1 and not sim.requests.records()[0].authorized
    assert info.value.status_code == 401 and info.value.error_code == "invalid_api_key"
    assert_clean(info.value, wrong, KEY)


def test_an_error_body_echoing_the_key_is_scrubbed(
    sim: RLSimulator, client: RLSessionsClient
) -> None:
    echo = f"rejected header Authorization: Bearer {KEY} (key {KEY})"
    sim.faults.add("GET /v1/rl/supported-models", status=429, retry_after=0.01, message=echo)
    with pytest.raises(RateLimitError) as info:
        client.list_supported_models()
    assert info.value.attempts == 4 and "rejected header" in str(info.value)
    assert_clean(info.value, KEY)


@pytest.mark.parametrize("fault", ["drop", "reset_after_headers", "slow", "malformed"])
def test_transport_and_decode_failures_chain_nothing_that_holds_the_key(
    sim: RLSimulator, retries: RetryRecorder, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    pattern = "GET /v1/rl/supported-models"
    if fault == "slow":
        sim.faults.add(pattern, delay_s=2.0)
    else:
        sim.faults.add(pattern, **{fault: True})
    caplog.set_level(logging.DEBUG)  # httpx/httpcore debug logging included
    policy = retries.policy(max_attempts=2)
    with (
        RLSessionsClient(KEY, base_url=sim.base_url, retry=policy, timeout=0.3) as client,
        pytest.raises((TransportError, DecodeError)) as info,
    ):
        client.list_supported_models()
    assert str(info.value).startswith("GET /v1/rl/supported-models")
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert_clean(info.value, KEY)
    assert caplog.records and KEY not in caplog.text


def test_deadline_errors_are_clean_too(sim: RLSimulator, client: RLSessionsClient) -> None:
    sim.faults.add(
        "GET /v1/rl/supported-models", status=429, retry_after=30, message=f"Bearer {KEY}"
    )
    with pytest.raises(DeadlineExceeded) as info:
        # A deadline far above a loaded machine's request time and still under retry_after:
        # the 429 must arrive first, and the 30 s wait is refused at once, not slept.
        client.list_supported_models(deadline=time.monotonic() + 20.0)
    assert isinstance(info.value.last_error, RateLimitError)
    assert_clean(info.value, KEY)
    assert_clean(info.value.last_error, KEY)


def test_a_huge_api_message_is_capped():
    import httpx

    from rl_sessions_dagster.api.errors import BODY_EXCERPT_CHARS, error_from_response

    request = httpx.Request("GET", "http://127.0.0.1/v1/rl/training-sessions")
    body = {"error": {"message": "x" * 6000, "type": "server_error"}}
    response = httpx.Response(502, json=body, request=request)
    err = error_from_response(response, secrets=("k",))
    assert len(err.api_message) < BODY_EXCERPT_CHARS + 40
    assert len(str(err)) < BODY_EXCERPT_CHARS + 200


# -- scrubbing: whole tokens of secret length only ---------------------------------------------------


def test_scrub_masks_the_key_only_as_a_whole_token() -> None:
    key = "abcdefgh12345678"
    assert scrub(f"key={key}&next", [key]) == "key=***&next"
    assert scrub(f"t-{key}, ({key})", [key]) == "t-***, (***)"
    assert scrub(f"x{key} {key}9", [key]) == f"x{key} {key}9"  # other, longer tokens


def test_scrub_leaves_text_alone_for_a_key_too_short_to_be_a_secret() -> None:
    assert MIN_SECRET_CHARS == 8
    text = "[Errno -2] Name or service not known"
    assert scrub(text, ["k"]) == text and scrub(text, ["e"]) == text
    assert scrub("Authorization: Bearer k", ["k"]) == "Authorization: Bearer ***"
    err = transport_error(httpx.ConnectError(text), method="GET", url=httpx.URL(URL), secrets=["k"])
    assert str(err).endswith(text)
