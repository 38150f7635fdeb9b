"""Typed errors: status mapping, message shape, body parsing, and that the key never leaks.

Unit tests build ``httpx.Response`` objects directly (no transport involved); the end-to-end
leak checks against the simulator live at the bottom.
"""

from __future__ import annotations

import logging
import pickle
import shutil
import socket
import ssl
import subprocess
import threading
import time
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from rl_sessions_dagster.api import RLSessionsClient, TogetherRLError
from rl_sessions_dagster.api.errors import (
    BODY_EXCERPT_CHARS,
    MIN_SECRET_CHARS,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    DeadlineExceeded,
    DecodeError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TLSCertificateError,
    TransportError,
    UnprocessableEntityError,
    UnreachableHostError,
    configuration_failure,
    error_from_response,
    scrub,
    transport_error,
)
from rl_sessions_dagster.testing import RLSimulator

from .conftest import KEY, RetryRecorder

URL = "https://api.together.ai/v1/rl/training-sessions?limit=5&status=A%2CB"


def response(
    status: int, body: object = None, *, text: str | None = None, **headers: str
) -> httpx.Response:
    request = httpx.Request("GET", URL, headers={"Authorization": f"Bearer {KEY}"})
    if text is not None:
        return httpx.Response(status, text=text, headers=headers, request=request)
    return httpx.Response(status, json=body, headers=headers, request=request)


def leak_surface(exc: BaseException) -> str:
    """Everything a log, Dagster's error serialiser or a debugger would print."""
    parts = [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]
    parts += [repr(v) for v in vars(exc).values()]
    return "\n".join(parts)


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


def chain(exc: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def assert_clean(exc: BaseException, *secrets: str) -> None:
    for link in chain(exc):
        assert not isinstance(link, httpx.HTTPError), "an httpx error (with its request) is chained"
        surface = leak_surface(link)
        for secret in secrets:
            assert secret not in surface
    wrapped = RuntimeError("a sensor tick failed")
    wrapped.__cause__ = exc
    text = "".join(traceback.format_exception(wrapped))
    assert all(secret not in text for secret in secrets)


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


# -- a wrong host or certificate is a configuration error, raised at once ----------------------------


def _eai(host: str) -> int | None:
    try:
        socket.getaddrinfo(host, 443)
    except socket.gaierror as exc:
        return exc.errno
    return None


def test_an_unresolvable_host_is_an_unreachable_host_error_not_retried(
    retries: RetryRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = "nonexistent.invalid"  # RFC 6761: .invalid never resolves
    if _eai(host) != socket.EAI_NONAME:
        pytest.skip(f"this machine's resolver does not answer NONAME for {host}")
    monkeypatch.setenv("TOGETHER_BASE_URL", f"https://{host}")
    with (
        RLSessionsClient(KEY, retry=retries.policy()) as client,
        pytest.raises(UnreachableHostError) as info,
    ):
        client.list_sessions_page()
    err = info.value
    assert isinstance(err, ConfigurationError) and not err.retryable
    assert retries.events == [] and retries.sleeps == [] and err.attempts == 1
    assert err.host == host and err.base_url == f"https://{host}"
    assert f"'{host}'" in str(err) and f"'https://{host}'" in str(err)
    assert "TOGETHER_BASE_URL" in str(err) and "base_url" in str(err)
    assert err.method == "GET" and err.url == "/v1/rl/training-sessions?limit=100"
    assert_clean(err, KEY)


def test_a_temporary_resolver_failure_stays_a_retryable_transport_error() -> None:
    exc = httpx.ConnectError("[Errno -3] Temporary failure in name resolution")
    exc.__cause__ = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    url = httpx.URL(URL)
    kw = {"method": "GET", "url": url, "secrets": [KEY]}
    assert configuration_failure(exc, base_url="https://api.together.ai", **kw) is None  # type: ignore[arg-type]
    assert transport_error(exc, **kw).retryable  # type: ignore[arg-type]
    refused = httpx.ConnectError("[Errno 111] Connection refused")
    assert configuration_failure(refused, base_url="https://x.example", **kw) is None  # type: ignore[arg-type]
    named = httpx.ConnectError("[Errno -2] Name or service not known")  # no chained cause
    err = configuration_failure(named, base_url="https://api.together.ai", **kw)  # type: ignore[arg-type]
    assert isinstance(err, UnreachableHostError) and err.host == "api.together.ai"


@pytest.fixture
def self_signed_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a fresh self-signed certificate: (base URL, cert)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"data": [], "meta": {"has_more": false}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_an_untrusted_certificate_is_a_tls_certificate_error_not_retried(
    self_signed_server: tuple[str, Path], retries: RetryRecorder
) -> None:
    base_url, cert = self_signed_server
    with (
        RLSessionsClient(KEY, base_url=base_url, retry=retries.policy()) as client,
        pytest.raises(TLSCertificateError) as info,
    ):
        client.list_sessions_page()
    err = info.value
    assert isinstance(err, ConfigurationError) and not err.retryable
    assert retries.events == [] and err.attempts == 1
    assert err.host == "127.0.0.1" and base_url in str(err) and "TOGETHER_BASE_URL" in str(err)
    assert "self-signed certificate" in str(err)
    assert_clean(err, KEY)
    # Control: the same server, with its certificate trusted, answers.
    trusting = httpx.Client(verify=ssl.create_default_context(cafile=str(cert)))
    with RLSessionsClient(KEY, base_url=base_url, http_client=trusting) as client:
        assert client.list_sessions_page().data == []
    trusting.close()
