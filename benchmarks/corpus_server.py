"""The payload corpus as a list endpoint: ``GET /v1/rl/training-sessions`` over N sessions cycled
from ``tests/api/fixtures`` (every session shape the client is tested on: the current SDK's,
the May and August 2026 specs', int64 as strings, unknown values and fields, null and empty
blocks, minimal), each with its own id. 0-2 checkpoints per session, against 10 in the
simulator's populated world.

Run in its own process (``python -m benchmarks.corpus_server N``; prints its URL), like the
simulator, so serving never competes with the measured reader for the GIL. Pages are built
once, so a request costs the server a dictionary lookup. Stdlib only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .simproc import stop_child

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "api" / "fixtures"
PATH = "/v1/rl/training-sessions"


def corpus_sessions() -> list[dict[str, Any]]:
    """Every session object of the corpus: single sessions and the items of list pages."""
    out: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("session*.json")):
        doc = json.loads(path.read_text())
        items = doc.get("data") or [] if path.name.startswith("session_page__") else [doc]
        out += [item for item in items if isinstance(item, dict) and "id" in item]
    return out


def build_pages(n_sessions: int, limit: int = 100) -> dict[str, bytes]:
    """Page bodies by ``after`` cursor ("" for the first page)."""
    shapes = corpus_sessions()
    sessions = []
    for i in range(n_sessions):
        item = json.loads(json.dumps(shapes[i % len(shapes)]))
        item["id"] = f"sess-corpus-{i:07d}"
        sessions.append(item)
    pages: dict[str, bytes] = {}
    for start in range(0, n_sessions, limit):
        chunk = sessions[start : start + limit]
        more = start + limit < n_sessions
        meta = {"limit": limit, "has_more": more, "next_cursor": chunk[-1]["id"] if more else ""}
        after = sessions[start - 1]["id"] if start else ""
        pages[after] = json.dumps({"data": chunk, "meta": meta}).encode()
    return pages


def serve(n_sessions: int) -> None:
    pages = build_pages(n_sessions)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the API and the simulator
        disable_nagle_algorithm = True  # headers and body go out as two writes

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            body = pages.get(query.get("after", [""])[0]) if url.path.rstrip("/") == PATH else None
            if query.get("limit", ["100"])[0] != "100":
                body = None  # only the benchmark's page size is prebuilt
            status = 200 if body is not None else 404
            body = body if body is not None else b'{"error": {"message": "not found"}}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"corpus server listening on http://127.0.0.1:{server.server_port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.shutdown())
    server.serve_forever()


@contextmanager
def corpus_server(n_sessions: int) -> Iterator[str]:
    """Start the server in a child process; yield its base URL; stop it (by its pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.corpus_server", str(n_sessions)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on " not in line:
            raise RuntimeError(f"the corpus server did not start (rc={proc.poll()})")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        stop_child(proc)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
