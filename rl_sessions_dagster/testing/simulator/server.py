"""``RLSimulator``: a real HTTP/1.1 server, a thread per keep-alive connection, each response in
one ``write`` (no Nagle stalls). Per request: route, fault decision, delay (outside the world
lock), auth, handler, response hook, fault, log, write."""

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
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .control import add_control_routes
from .endpoints import add_api_routes
from .faults import FaultPlan, FaultRule
from .requestlog import RequestLog, RequestRecord
from .routing import Handler, Request, Response, Router
from .wire import SimulatorError, error_body
from .world import SimulatedWorld

Log = Callable[[int | None], None]  # records the request with the status the client saw


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256  # benchmarks open many connections at once

    def __init__(self, addr: tuple[str, int], sim: RLSimulator) -> None:
        self.sim = sim
        self.conn_lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        super().__init__(addr, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        name = f"rl-simulator-{self.server_address[1]}-conn"
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                             name=name, daemon=True)  # fmt: skip
        with self.conn_lock:
            self.connections.add(request)
            self.threads = {h for h in self.threads if h.is_alive()} | {t}
        t.start()

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "RLSimulator/1.0"
    disable_nagle_algorithm = True
    timeout = 300  # idle keep-alive connections close after this
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log replaces stderr access logs

    def date_time_string(self, timestamp: float | None = None) -> str:
        """``Date`` follows the world's clock, as a real server's agrees with its ``created_at``."""
        now = timestamp or self.server.sim.world.now().timestamp()
        return email.utils.formatdate(now, usegmt=True)

    def do_GET(self) -> None:
        sim, started, started_wall = self.server.sim, time.perf_counter(), time.time()
        request_id = "req_" + secrets.token_hex(12)
        split = urlsplit(self.path)
        path, method = split.path or "/", self.command.upper()
        query = parse_qs(split.query, keep_blank_values=True)
        body = self._read_body()
        handler, template, ids, allowed = sim.router.match(method, path)
        faultable = path.startswith(("/v1/", "/_sim/files/"))  # never the control API
        rule = sim.faults.decide(method, path, template) if faultable else None
        authorized = sim.authorized(path, self.headers.get("Authorization") or "")
        logged = False

        def log(status: int | None) -> None:
            # Before the response goes out: a client that has its answer can assert on the log.
            nonlocal logged
            if not logged:
                logged = True
                sim.requests.record(RequestRecord(
                    request_id, method, path, template, query, status, rule.label() if rule else None,
                    self.headers.get("Idempotency-Key"), authorized, time.perf_counter() - started,
                    started_wall,
                ))  # fmt: skip

        try:
            if rule is not None and rule.delay_s > 0 and sim._stopping.wait(rule.delay_s):
                return self._abort(log, reset=False)  # stopping: end the delay at once
            resp = None
            if rule is None or not rule.terminal or rule.processes_request:
                req = Request(method, path, ids, query, self.headers, body, sim.base_url, request_id)  # fmt: skip
                resp = sim.handle(req, handler, allowed, authorized)
            if rule is not None and rule.terminal:
                self._fault(rule, resp, request_id, log)
            elif resp is not None:
                log(resp.status)
                self._write(resp.status, resp.body, request_id, resp.content_type, resp.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            log(None)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length, self.close_connection = 0, True  # the stream cannot be trusted any more
        return self.rfile.read(length) if length > 0 else b""

    def _write(self, status: int, body: bytes, request_id: str, content_type: str = "application/json",
               headers: dict[str, str] | None = None, send_body: bool = True) -> None:  # fmt: skip
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Simulated"
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
                 f"Content-Length: {len(body)}", f"x-request-id: {request_id}",
                 f"Date: {self.date_time_string()}"]  # fmt: skip
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + body if send_body else head)
        self.wfile.flush()

    def _abort(self, log: Log, *, reset: bool) -> None:
        """End the connection without a complete response; ``reset`` sends a TCP RST."""
        log(None)
        self.close_connection = True
        with contextlib.suppress(OSError):
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # fmt: skip
            else:
                self.connection.shutdown(socket.SHUT_RDWR)

    def _fault(self, rule: FaultRule, resp: Response | None, request_id: str, log: Log) -> None:
        if rule.drop:
            return self._abort(log, reset=False)
        if rule.status is not None:
            status, body, headers = rule.error_response()
            log(status)
            return self._write(status, body, request_id, headers=headers)
        real = resp or Response(200, b'{"data":[],"meta":{"limit":20,"has_more":false}}')
        if rule.reset_after_headers:
            log(real.status)
            self.close_connection = True
            self._write(real.status, real.body, request_id, real.content_type, send_body=False)
            return self._abort(lambda _: None, reset=True)
        log(200)  # malformed: the real body cut in half
        cut = real.body[: max(1, len(real.body) // 2)]
        self._write(200, cut, request_id, real.content_type, real.headers)


class RLSimulator:
    """A local Together RL service: ``with RLSimulator(api_key="k") as sim:`` serves
    ``sim.world`` on ``sim.base_url`` (no ``/v1``), with ``sim.faults`` and ``sim.requests``.
    ``/v1/*`` needs ``Authorization: Bearer <api_key>``; ``/_sim/*`` needs nothing."""

    def __init__(self, api_key: str = "sim-key", world: SimulatedWorld | None = None, seed: int = 0,
                 port: int = 0, *, host: str = "127.0.0.1") -> None:  # fmt: skip
        self.api_key, self.host, self._port = api_key, host, port
        self.world = world if world is not None else SimulatedWorld(seed=seed)
        self.faults, self.requests = FaultPlan(seed=seed), RequestLog()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.router = Router()
        add_api_routes(self.router, self.world, secrets.token_bytes(16))
        add_control_routes(self.router, self.world, self.faults, self.requests)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> RLSimulator:
        if self._server is None:
            self._stopping.clear()
            self._server = _Server((self.host, self._port), self)
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                name=f"rl-simulator-{self.port}", daemon=True,
            )  # fmt: skip
            self._thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> None:
        """No listener, no open connection (idle keep-alive ones closed), threads joined."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with server.conn_lock:
            conns, threads = list(server.connections), list(server.threads)
        for conn in conns:  # unblock handlers waiting on idle keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for t in [thread, *threads]:
            if t is not None:
                t.join(max(0.0, deadline - time.monotonic()))
        self._server = self._thread = None

    def __enter__(self) -> RLSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def authorized(self, path: str, authorization: str) -> bool:
        scheme, _, token = authorization.partition(" ")
        expected = self.api_key.encode()
        return not path.startswith("/v1/") or (
            scheme.lower() == "bearer" and secrets.compare_digest(token.strip().encode(), expected)
        )

    def handle(self, req: Request, handler: Handler | None, allowed: list[str],
               authorized: bool) -> Response:  # fmt: skip
        try:
            if not authorized:
                message = "Invalid API key provided" if req.headers.get("Authorization") else "Missing API key"  # fmt: skip
                raise SimulatorError(401, message, code="invalid_api_key")
            if handler is None and allowed:
                allow = {"Allow": ", ".join(sorted(set(allowed)))}
                return Response(405, error_body(405, f"Method {req.method} not allowed"), headers=allow)  # fmt: skip
            if handler is None:
                raise SimulatorError(404, f"Unknown request URL: {req.method} {req.path}", code="unknown_url")  # fmt: skip
            resp = handler(req)
        except SimulatorError as exc:
            resp = Response(exc.status, exc.body())
        except Exception as exc:  # a simulator bug: a 500, and the traceback on stderr
            traceback.print_exc(file=sys.stderr)
            resp = Response(500, error_body(500, f"simulator internal error: {exc!r}"))
        hook = self.world.response_hook
        api_json = req.path.startswith("/v1/") and resp.content_type == "application/json"
        if hook is not None and api_json:
            try:
                payload = hook(req.path, json.loads(resp.body))
                resp.body = json.dumps(payload, separators=(",", ":")).encode()
            except Exception as exc:  # a broken hook must not kill the connection thread
                traceback.print_exc(file=sys.stderr)
                resp = Response(500, error_body(500, f"response_hook failed: {exc!r}"))
        return resp
