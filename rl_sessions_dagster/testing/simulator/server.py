"""``RLSimulator``: a real HTTP/1.1 server on 127.0.0.1 speaking the Together RL wire format.

One ``ThreadingHTTPServer`` in a background thread, a thread per connection, keep-alive with
exact Content-Length (so httpx connection reuse works), every response written in a single
``write`` (no Nagle stalls). Per request: read the body → route → fault decision → optional
delay (outside the world lock) → auth → handler → response hook → fault → write → log.
``stop()`` closes idle keep-alive sockets too, so no thread keeps serving after it returns.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import secrets
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .chat import ChatEndpoint
from .control import ControlEndpoints
from .endpoints import RLEndpoints
from .errors import SimulatorError, error_body
from .faults import FaultPlan, FaultRule
from .files import CheckpointFiles
from .requestlog import RequestLog, RequestRecord
from .routing import Request, Response, Route, Router
from .world import SimulatedWorld


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256  # benchmarks open many connections at once

    def __init__(self, addr: tuple[str, int], sim: RLSimulator) -> None:
        self.sim = sim
        self.conn_lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        self.handler_threads: set[threading.Thread] = set()
        super().__init__(addr, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"rl-simulator-{self.server_address[1]}-conn",
            daemon=True,
        )
        with self.conn_lock:
            self.connections.add(request)
            self.handler_threads = {h for h in self.handler_threads if h.is_alive()}
            self.handler_threads.add(t)
        t.start()

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Unblock handler threads waiting on idle keep-alive connections."""
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "RLSimulator/1.0"
    disable_nagle_algorithm = True
    timeout = 300  # idle keep-alive connections are closed after this
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log replaces stderr access logs

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The ``Date`` header follows the world's clock (manual or shifted), as a real
        server's clock agrees with the ``created_at`` it stamps."""
        if timestamp is None:
            timestamp = self.server.sim.world.now().timestamp()
        return email.utils.formatdate(timestamp, usegmt=True)

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    # --- plumbing --------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
            self.close_connection = True  # the stream cannot be trusted any more
        return self.rfile.read(length) if length > 0 else b""

    def _write(
        self,
        status: int,
        body: bytes,
        request_id: str,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        send_body: bool = True,
    ) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Simulated"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            f"x-request-id: {request_id}",
            f"Date: {self.date_time_string()}",
        ]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + body if send_body else head)
        self.wfile.flush()

    def _abort(self, reset: bool) -> None:
        """End the connection without a (complete) response; ``reset`` sends a TCP RST."""
        self.close_connection = True
        try:
            if reset:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- the request pipeline --------------------------------------------------------------
    def _dispatch(self) -> None:
        sim = self.server.sim
        started = time.perf_counter()
        started_wall = time.time()
        request_id = "req_" + secrets.token_hex(12)
        split = urlsplit(self.path)
        path = split.path or "/"
        query = parse_qs(split.query, keep_blank_values=True)
        method = self.command.upper()
        body = self._read_body()
        route, template, ids, allowed = sim.router.match(method, path)
        faultable = path.startswith("/v1/") or path.startswith("/_sim/files/")
        rule = sim.faults.decide(method, path, template) if faultable else None
        authorized = self._authorized(path)
        logged = False

        def log(status: int | None) -> None:
            # Recorded before the response goes out, so a client that got its answer can
            # assert on the log right away.
            nonlocal logged
            if logged:
                return
            logged = True
            sim.requests.record(
                RequestRecord(
                    request_id=request_id,
                    method=method,
                    path=path,
                    template=template,
                    query=query,
                    status=status,
                    fault=rule.label() if rule is not None else None,
                    idempotency_key=self.headers.get("Idempotency-Key"),
                    authorized=authorized,
                    duration_s=time.perf_counter() - started,
                    started_at=started_wall,
                )
            )

        try:
            if rule is not None and rule.delay_s > 0 and sim._stopping.wait(rule.delay_s):
                log(None)
                self._abort(reset=False)
                return
            resp = None
            if rule is None or not rule.terminal or rule.processes_request:
                req = Request(
                    method, path, template, ids, query, self.headers, body, sim.base_url, request_id
                )
                resp = sim._handle(req, route, allowed, authorized)
            if rule is not None and rule.terminal:
                self._apply_fault(rule, resp, request_id, log)
            elif resp is not None:
                log(resp.status)
                self._write(resp.status, resp.body, request_id, resp.content_type, resp.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            log(None)

    def _authorized(self, path: str) -> bool:
        if not path.startswith("/v1/"):
            return True
        auth = self.headers.get("Authorization") or ""
        scheme, _, token = auth.partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(
            token.strip().encode(), self.server.sim.api_key.encode()
        )

    def _apply_fault(
        self,
        rule: FaultRule,
        resp: Response | None,
        request_id: str,
        log: Callable[[int | None], None],
    ) -> None:
        """Write (or withhold) the faulty response, logging the status the client will see."""
        if rule.drop:
            log(None)
            self._abort(reset=False)
            return
        if rule.status is not None:
            status, body, headers = rule.error_response()
            log(status)
            self._write(status, body, request_id, headers=headers)
            return
        real = resp or Response(200, b'{"data":[],"meta":{"limit":20,"has_more":false}}')
        if rule.reset_after_headers:
            log(real.status)
            self.close_connection = True
            self._write(real.status, real.body, request_id, real.content_type, send_body=False)
            self._abort(reset=True)
            return
        log(200)
        cut = real.body[: max(1, len(real.body) // 2)]
        self._write(200, cut, request_id, real.content_type, real.headers)


class RLSimulator:
    """A local Together RL service for tests, benchmarks and demos.

    ``with RLSimulator(api_key="sim-key") as sim:`` serves on ``sim.base_url``
    (``http://127.0.0.1:PORT``, no ``/v1``). ``sim.world`` is the :class:`SimulatedWorld`,
    ``sim.faults`` the :class:`FaultPlan`, ``sim.requests`` the :class:`RequestLog`.
    ``/v1/*`` needs ``Authorization: Bearer <api_key>``; ``/_sim/*`` needs nothing.
    """

    def __init__(
        self,
        api_key: str = "sim-key",
        world: SimulatedWorld | None = None,
        seed: int = 0,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
    ) -> None:
        self.api_key = api_key
        self.world = world if world is not None else SimulatedWorld(seed=seed)
        self.faults = FaultPlan(seed=seed)
        self.requests = RequestLog()
        self.host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.router = Router()
        self.files = CheckpointFiles(self.world, secrets.token_bytes(16))
        RLEndpoints(self.world).register(self.router)
        self.files.register(self.router)
        ChatEndpoint(self.world).register(self.router)
        ControlEndpoints(self.world, self.faults, self.requests).register(self.router)

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` — the client appends ``/v1/...``."""
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header for this simulator's API key."""
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> RLSimulator:
        """Bind and serve in a daemon thread; returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self.host, self._port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"rl-simulator-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> None:
        """Stop serving: no listener, no open connection, handler threads joined (≤ timeout)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        server.close_connections()
        deadline = time.monotonic() + timeout
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        with server.conn_lock:
            threads = list(server.handler_threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._server = None
        self._thread = None

    def __enter__(self) -> RLSimulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- request handling ------------------------------------------------------------------
    def _handle(
        self, req: Request, route: Route | None, allowed: list[str], authorized: bool
    ) -> Response:
        """Auth, routing errors, the handler itself, SimulatorError → error body, hook."""
        try:
            if not authorized:
                has_header = bool(req.headers.get("Authorization"))
                message = "Invalid API key provided" if has_header else "Missing API key"
                raise SimulatorError(401, message, code="invalid_api_key")
            if route is None:
                if allowed:
                    resp = Response(405, error_body(405, f"Method {req.method} not allowed"))
                    resp.headers["Allow"] = ", ".join(sorted(set(allowed)))
                    return resp
                raise SimulatorError(
                    404, f"Unknown request URL: {req.method} {req.path}", code="unknown_url"
                )
            resp = route.handler(req)
        except SimulatorError as exc:
            resp = Response(exc.status, exc.body())
        except Exception as exc:  # a simulator bug: report it as a 500 and on stderr
            traceback.print_exc(file=sys.stderr)
            resp = Response(500, error_body(500, f"simulator internal error: {exc!r}"))
        hook = self.world.response_hook
        if (
            hook is not None
            and req.path.startswith("/v1/")
            and resp.content_type == "application/json"
        ):
            try:
                payload = hook(req.path, json.loads(resp.body))
                resp.body = json.dumps(payload, separators=(",", ":")).encode()
            except Exception as exc:  # a broken hook must not kill the connection thread
                traceback.print_exc(file=sys.stderr)
                resp = Response(500, error_body(500, f"response_hook failed: {exc!r}"))
        return resp
