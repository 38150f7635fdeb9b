"""A wrong host or certificate is a configuration error, raised at once (not retried), and as
clean of the key as any other error."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from rl_sessions_dagster.api import RLSessionsClient
from rl_sessions_dagster.api.errors import (
    ConfigurationError,
    TLSCertificateError,
    UnreachableHostError,
    configuration_failure,
    transport_error,
)

from .conftest import KEY, RetryRecorder, assert_clean

URL = "https://api.together.ai/v1/rl/training-sessions?limit=5&status=A%2CB"


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
