"""An HTTP dispatch target for tests: records every POST, answers as scripted, keeps sessions."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    key: str | None
    body: dict[str, Any]
    #: the X-Hookspawn-Signature-256 header as sent (None: absent)
    signature: str | None = None
    #: the body exactly as sent (what the signature covers)
    raw: bytes = b""


def verify_signature(raw: bytes, header: str | None, secret: str) -> bool:
    """A receiver's check of X-Hookspawn-Signature-256 (the README's recipe)."""
    if header is None or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(header.removeprefix("sha256="), expected)


@dataclass
class DispatchTarget:
    """Answers the next scripted statuses first, then 201 (or 409 for a known key).

    `fail_each` makes every new Idempotency-Key fail that many times before it succeeds.
    With a `secret`, a POST whose X-Hookspawn-Signature-256 does not verify is answered 401
    (and counted in `unsigned`) before anything else.
    """

    script: list[int] = field(default_factory=list)
    fail_each: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    #: requests whose body ended before its Content-Length (the sender died mid-request):
    #: refused, as any HTTP server would, and never seen by `answer`
    truncated: int = 0
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    secret: str | None = None
    unsigned: int = 0
    #: every POST as it arrived, signature and raw body included
    arrived: list[Received] = field(default_factory=list)

    def answer(self, key: str | None, body: dict[str, Any]) -> int:
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.received.append(Received(key, body))
            if self.script:
                return self.script.pop(0)
            seen = self.failures.get(key or "", 0)
            if seen < self.fail_each:
                self.failures[key or ""] = seen + 1
                return 500
            if key and key in self.sessions:
                return 409
            self.sessions[key or body.get("id", "")] = body
            return 201


SIGNATURE = "X-Hookspawn-Signature-256"


@contextmanager
def dispatch_target(**kwargs: Any) -> Iterator[DispatchTarget]:
    target = DispatchTarget(**kwargs)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:
                with target.lock:
                    target.truncated += 1
                self.send_error(400, "body shorter than its Content-Length")
                return
            body = json.loads(raw or b"{}")
            key, signed = self.headers.get("Idempotency-Key"), self.headers.get(SIGNATURE)
            with target.lock:
                target.arrived.append(Received(key, body, signed, raw))
                refused = target.secret is not None and not verify_signature(
                    raw, signed, target.secret
                )
                if refused:
                    target.unsigned += 1
            status = 401 if refused else target.answer(key, body)
            payload = json.dumps({"id": body.get("id")}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            # a worker killed mid-request leaves a broken pipe behind: expected, not news
            return

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    target.url = f"http://127.0.0.1:{server.server_address[1]}/sessions"
    try:
        yield target
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
